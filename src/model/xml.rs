//! What the URDF and MJCF loaders share: the file error type and the XML
//! attribute readers. Every error names the file, the element and the reason.

use std::fmt;

/// A model file that cannot be loaded: the file, the element and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFileError {
    pub file: String,
    pub element: String,
    pub reason: String,
}

impl fmt::Display for ModelFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.element, self.reason)
    }
}

impl std::error::Error for ModelFileError {}

/// Builds errors for one file: `err(element, reason)`.
pub(crate) fn error_for(file: &str) -> impl Fn(&str, String) -> ModelFileError + '_ {
    move |element: &str, reason: String| ModelFileError {
        file: file.into(),
        element: element.into(),
        reason,
    }
}

/// Reads a whole model file, naming it in the error.
pub(crate) fn read_file(path: &std::path::Path) -> Result<String, ModelFileError> {
    std::fs::read_to_string(path).map_err(|e| ModelFileError {
        file: path.display().to_string(),
        element: "file".into(),
        reason: e.to_string(),
    })
}

/// The value of a required attribute.
pub(crate) fn required<'a>(
    node: &roxmltree::Node<'a, '_>,
    attr: &str,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<String, ModelFileError> {
    node.attribute(attr)
        .map(str::to_string)
        .ok_or_else(|| err(element, format!("missing attribute `{attr}`")))
}

/// Parses a list of exactly `N` finite numbers.
pub(crate) fn numbers<const N: usize>(
    text: &str,
    what: &str,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<[f64; N], ModelFileError> {
    let v = number_list(text, what, element, err)?;
    v.try_into().map_err(|v: Vec<f64>| {
        err(
            element,
            format!("`{what}` needs {N} numbers, got {} (`{text}`)", v.len()),
        )
    })
}

/// Parses a whitespace-separated list of finite numbers.
pub(crate) fn number_list(
    text: &str,
    what: &str,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<Vec<f64>, ModelFileError> {
    text.split_whitespace()
        .map(|s| {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| err(element, format!("`{what}`: `{s}` is not a finite number")))
        })
        .collect()
}

/// A required attribute holding one finite number.
pub(crate) fn scalar(
    node: &roxmltree::Node,
    attr: &str,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<f64, ModelFileError> {
    let s = required(node, attr, element, err)?;
    Ok(numbers::<1>(&s, attr, element, err)?[0])
}

/// The first child element with tag `tag`.
pub(crate) fn child<'a, 'i>(
    node: &roxmltree::Node<'a, 'i>,
    tag: &str,
) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|n| n.has_tag_name(tag))
}
