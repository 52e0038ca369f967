//! `<include file="...">`: MuJoCo assembles the included files into one
//! document before reading it. Each include is replaced by the children of
//! its file's top element (whatever that element is called); includes nest;
//! a file may be included once in the whole model (so a cycle is refused),
//! and an included file must bring at least one element. A relative path is
//! looked up first in the main file's directory, then in the directory of
//! the file that includes it (MuJoCo 4.0 does the same).
//!
//! The splice is textual, on the byte ranges the XML parser reports, so
//! every element keeps its attributes and order exactly. Errors inside an
//! included file's XML name that file; errors found later, while the
//! assembled model is read, name the main file and the element.

use crate::model::xml::{ModelFileError, error_for, read_file};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The model text with every `<include>` expanded (borrowed when there is none).
pub(super) fn expand_includes<'t>(
    text: &'t str,
    file: &str,
    model_dir: &Path,
) -> Result<Cow<'t, str>, ModelFileError> {
    if !text.contains("include") {
        return Ok(Cow::Borrowed(text));
    }
    let mut included = Vec::new();
    expand(text, file, model_dir, model_dir, &mut included)
}

fn expand<'t>(
    text: &'t str,
    file: &str,
    model_dir: &Path,
    dir: &Path,
    included: &mut Vec<PathBuf>,
) -> Result<Cow<'t, str>, ModelFileError> {
    let err = error_for(file);
    let doc = roxmltree::Document::parse(text).map_err(|e| err("XML", e.to_string()))?;
    let includes: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("include"))
        .collect();
    if includes.is_empty() {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for inc in includes {
        let Some(name) = inc.attribute("file") else {
            return Err(err("<include>", "missing attribute `file`".into()));
        };
        let el = format!("<include file=\"{name}\">");
        if inc.children().any(|c| c.is_element()) {
            return Err(err(&el, "an <include> cannot have child elements".into()));
        }
        let given = Path::new(name);
        let path = if given.is_absolute() || model_dir.join(given).exists() {
            model_dir.join(given)
        } else {
            dir.join(given)
        };
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            err(
                &el,
                format!(
                    "cannot read `{}` (looked in the main file's directory {} and in {}): {e}",
                    name,
                    model_dir.display(),
                    dir.display()
                ),
            )
        })?;
        if included.contains(&canonical) {
            return Err(err(
                &el,
                format!(
                    "`{}` is already included: MuJoCo includes a file at most once per model (an include cycle also ends here)",
                    canonical.display()
                ),
            ));
        }
        included.push(canonical);
        let sub = read_file(&path)?;
        let sub_file = path.display().to_string();
        let sub_dir = path.parent().unwrap_or(Path::new("."));
        let sub = expand(&sub, &sub_file, model_dir, sub_dir, included)?;
        let sub_doc = roxmltree::Document::parse(&sub)
            .map_err(|e| error_for(&sub_file)("XML", e.to_string()))?;
        let top = sub_doc.root_element();
        let children: Vec<_> = top.children().collect();
        if !children.iter().any(|c| c.is_element()) {
            return Err(err(
                &el,
                format!(
                    "`{sub_file}` has no elements inside its top element <{}>",
                    top.tag_name().name()
                ),
            ));
        }
        let (first, last) = (children[0].range(), children[children.len() - 1].range());
        out.push_str(&text[at..inc.range().start]);
        out.push_str(&sub[first.start..last.end]);
        at = inc.range().end;
    }
    out.push_str(&text[at..]);
    Ok(Cow::Owned(out))
}
