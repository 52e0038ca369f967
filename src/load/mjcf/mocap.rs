//! MuJoCo's mocap bodies as the file declares them (`mocap="true"`):
//! which bodies, and the refusals of what a mocap body would not carry.

use super::{ModelFileError, Parser};
use crate::math::SE3;
use crate::model::Model;
use roxmltree::Node;

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// Whether the body `node` (element `el`, child of MJCF body `parent`)
    /// is a mocap body; a mocap body must be a child of the world.
    pub(super) fn mocap_attribute(
        &self,
        node: &Node<'a, 'i>,
        el: &str,
        parent: usize,
    ) -> Result<bool, ModelFileError> {
        let mocap = match node.attribute("mocap") {
            None | Some("false") => false,
            Some("true") => true,
            Some(v) => {
                return Err(self.error(el, format!("mocap=\"{v}\": expected true or false")));
            }
        };
        if mocap && parent != 0 {
            return Err(self.error(
                el,
                "a mocap body must be a child of the world (as MuJoCo requires)".into(),
            ));
        }
        Ok(mocap)
    }

    /// A mocap body's pose is an input of each world: refused where it
    /// would not carry what it holds (a joint, a body, a colliding geom
    /// would stay at the file's pose).
    pub(super) fn check_mocap(&self, id: usize) -> Result<(), ModelFileError> {
        let b = &self.bodies[id];
        if let Some(j) = b.joints.first() {
            return Err(self.error(
                &j.element,
                "a mocap body has no joints (as MuJoCo requires)".into(),
            ));
        }
        if let Some(child) = self.bodies.iter().find(|c| c.parent == id) {
            return Err(self.error(
                &child.element,
                format!("a body on mocap body {} is not supported (it would not follow the mocap's pose)", b.element),
            ));
        }
        if let Some(c) = b.cameras.first() {
            return Err(self.error(
                &c.element,
                format!(
                    "a camera on mocap body {} is not supported (it would stay at the file's pose)",
                    b.element
                ),
            ));
        }
        if let Some(g) = b.geoms.iter().find(|g| g.shape.is_some()) {
            return Err(self.error(
                &g.element,
                format!(
                    "a colliding geom on mocap body {} is not supported (it would collide at the file's pose); give it contype=\"0\" conaffinity=\"0\"",
                    b.element
                ),
            ));
        }
        Ok(())
    }

    /// The mocap body (its element) that the sensor `e` reads a site or
    /// body of, if any: its frames stay at the file's pose, so such a
    /// sensor is refused.
    pub(super) fn sensor_on_mocap(&self, e: &Node<'a, 'i>) -> Option<&str> {
        let mocap = |b: usize| {
            self.bodies
                .get(b)
                .filter(|r| r.mocap)
                .map(|r| r.element.as_str())
        };
        let site = |name: &str| self.site_full(name).and_then(|(b, _)| mocap(b));
        let body = |name: &str| {
            let b = self.bodies.iter().position(|r| r.name == name)?;
            mocap(b)
        };
        if let Some(found) = e.attribute("site").and_then(site) {
            return Some(found);
        }
        if let Some(found) = e.attribute("body").and_then(body) {
            return Some(found);
        }
        for (kind, name) in [("objtype", "objname"), ("reftype", "refname")] {
            let (Some(k), Some(n)) = (e.attribute(kind), e.attribute(name)) else {
                continue;
            };
            let found = match k {
                "site" => site(n),
                "body" | "xbody" => body(n),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Whether MJCF body `b` is a mocap body.
    pub(super) fn is_mocap(&self, b: usize) -> bool {
        self.bodies.get(b).is_some_and(|r| r.mocap)
    }

    /// The mocap bodies (carried by the world) added to `model` in file
    /// order (`from`: each MJCF body's frame in its carrier's): each MJCF
    /// body's mocap index, if it is one.
    pub(super) fn mocap_bodies(&self, model: &mut Model, from: &[SE3]) -> Vec<Option<usize>> {
        let mut mocap_of = vec![None; self.bodies.len()];
        // (Frame b − 1 is MJCF body b; the sites follow, body by body.)
        let mut site_frame = self.bodies.len() - 1;
        for (b, body) in self.bodies.iter().enumerate() {
            let sites = site_frame..site_frame + body.sites.len();
            site_frame = sites.end;
            if !body.mocap {
                continue;
            }
            mocap_of[b] = Some(model.mocap.len());
            model.mocap.push(crate::model::Mocap {
                name: body.name.clone(),
                pose: from[b],
                frames: std::iter::once(b - 1).chain(sites).collect(),
            });
        }
        mocap_of
    }
}
