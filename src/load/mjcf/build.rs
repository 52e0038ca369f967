//! Building the model from what was read: MJCF bodies with several joints
//! become chains of bodies, welded bodies merge, then geoms, actuators and
//! the warnings.

use super::*;

/// `name`, or `name#2`, `name#3`, ... if taken; records it.
pub(super) fn unique(name: String, used: &mut HashSet<String>) -> String {
    let mut out = name.clone();
    let mut k = 2;
    while used.contains(&out) {
        out = format!("{name}#{k}");
        k += 1;
    }
    used.insert(out.clone());
    out
}

/// A body of the model to build: one per joint of an MJCF body (the last
/// one carries the mass) and one per free body.
struct Plan {
    name: String,
    element: String,
    parent: usize,
    joint: JointType,
    placement: SE3,
    inertia: Inertia,
    massless: bool,
    spec: JointSpec,
    springdamper: Option<(f64, f64)>,
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    pub(super) fn build(
        mut self,
        root: Node<'a, 'i>,
        timestep: f64,
        gravity: Vec3,
        medium: crate::model::Medium,
    ) -> Result<MjcfModel, ModelFileError> {
        let n = self.bodies.len();
        if let Some(total) = self.settotalmass {
            let current: f64 = self.bodies.iter().map(|b| b.inertia.mass).sum();
            if !(total > 0.0 && current > 0.0 && current.is_finite()) {
                return Err(self.error(
                    "<compiler>",
                    format!(
                        "settotalmass=\"{total}\" needs a positive total and a model with mass (it has {current})"
                    ),
                ));
            }
            let s = total / current;
            for b in &mut self.bodies {
                b.inertia.mass *= s;
                b.inertia.rotational *= s;
            }
        }

        // Pass 1: the model's bodies. `carrier[b]`: the plan carrying MJCF
        // body `b`; `from[b]`: MJCF frame of `b` in that plan's frame;
        // `weld[b]`: the MJCF body with joints that `b` is welded to (0: world).
        let mut plans: Vec<Plan> = vec![Plan {
            name: "world".into(),
            element: "<worldbody>".into(),
            parent: WORLD,
            joint: JointType::Fixed,
            placement: SE3::identity(),
            inertia: Inertia::zero(),
            massless: true,
            spec: JointSpec::default(),
            springdamper: None,
        }];
        let mut carrier = vec![WORLD; n];
        let mut from = vec![SE3::identity(); n];
        let mut weld = vec![0usize; n];
        let mut q0: Vec<f64> = Vec::new();
        let mut joint_plan: HashMap<String, (usize, JointKind, String)> = HashMap::new();
        let mut used: HashSet<String> = HashSet::from(["world".to_string()]);
        for b in 1..n {
            let body = &self.bodies[b];
            let p = body.parent;
            let tail = from[p].mul(&body.local);
            if body.joints.is_empty() {
                carrier[b] = carrier[p];
                from[b] = tail;
                weld[b] = weld[p];
                continue;
            }
            weld[b] = b;
            let bname = unique(
                if body.name.is_empty() {
                    format!("body{b}")
                } else {
                    body.name.clone()
                },
                &mut used,
            );
            let nj = body.joints.len();
            if let Some(free) = body.joints.iter().find(|j| j.kind == JointKind::Free) {
                if nj > 1 {
                    return Err(self.error(
                        &free.element,
                        format!(
                            "a free joint must be the only joint of its body {}",
                            body.element
                        ),
                    ));
                }
                if p != 0 {
                    return Err(self.error(
                        &free.element,
                        format!(
                            "a free joint can only be used on a top-level body (a child of <worldbody>), not in {}",
                            body.element
                        ),
                    ));
                }
                plans.push(Plan {
                    name: bname,
                    element: body.element.clone(),
                    parent: carrier[p],
                    joint: JointType::Free,
                    placement: from[p],
                    inertia: Inertia::zero(),
                    massless: false,
                    spec: free.spec.clone(),
                    springdamper: None,
                });
                let quat = body.local.quaternion();
                q0.extend([
                    body.local.translation.x,
                    body.local.translation.y,
                    body.local.translation.z,
                    quat.i,
                    quat.j,
                    quat.k,
                    quat.w,
                ]);
                joint_plan.insert(
                    free.name.clone(),
                    (plans.len() - 1, JointKind::Free, free.element.clone()),
                );
                carrier[b] = plans.len() - 1;
                from[b] = SE3::identity();
                continue;
            }
            let mut parent_plan = carrier[p];
            let mut tail = tail;
            for (k, j) in body.joints.iter().enumerate() {
                let last = k + 1 == nj;
                // `ref` is folded into the placement: q = ref is the pose of the file.
                let (jt, ref_shift) = match j.kind {
                    JointKind::Hinge => (
                        JointType::Revolute(j.axis),
                        SE3::from_axis_angle(&j.axis, -j.reference),
                    ),
                    JointKind::Slide => (
                        JointType::Prismatic(j.axis),
                        SE3::from_translation(-j.axis * j.reference),
                    ),
                    _ => (JointType::Spherical, SE3::identity()),
                };
                match j.kind {
                    JointKind::Ball => q0.extend([0.0, 0.0, 0.0, 1.0]),
                    _ => q0.push(j.reference),
                }
                let name = if last {
                    bname.clone()
                } else {
                    let jn = if j.name.is_empty() {
                        format!("joint{k}")
                    } else {
                        j.name.clone()
                    };
                    unique(format!("{bname}.{jn}"), &mut used)
                };
                plans.push(Plan {
                    name,
                    element: body.element.clone(),
                    parent: parent_plan,
                    joint: jt,
                    placement: tail.mul(&SE3::from_translation(j.pos)).mul(&ref_shift),
                    inertia: Inertia::zero(),
                    massless: !last,
                    spec: j.spec.clone(),
                    springdamper: j.springdamper,
                });
                parent_plan = plans.len() - 1;
                tail = SE3::from_translation(-j.pos);
                if !j.name.is_empty() {
                    joint_plan.insert(j.name.clone(), (parent_plan, j.kind, j.element.clone()));
                }
            }
            carrier[b] = parent_plan;
            from[b] = tail;
        }
        // Inertias, merged into the carrying bodies (static ones into the world: dropped).
        for b in 1..n {
            if carrier[b] != WORLD {
                let c = carrier[b];
                plans[c].inertia = plans[c]
                    .inertia
                    .add(&self.bodies[b].inertia.transformed(&from[b]));
            }
        }
        // MuJoCo's rule: a body moved by a joint has mass and inertia, its
        // own or that of the bodies welded to it (jointless descendants: a
        // free object whose geoms sit in a child body).
        for plan in plans.iter().skip(1).filter(|p| !p.massless) {
            validate_inertia(&plan.name, &plan.inertia).map_err(|e| {
                self.error(
                    &plan.element,
                    format!(
                        "a body moved by a joint needs positive mass and a positive definite inertia (from <inertial> or its geoms, or those of the bodies welded to it): {e}"
                    ),
                )
            })?;
        }

        // Pass 2: the builder (plan index = body index).
        let mut builder = ModelBuilder::new(root.attribute("model").unwrap_or("mjcf"));
        // MuJoCo's contacts take the larger friction (or the higher priority's).
        builder.set_friction_mix(FrictionMix::Maximum);
        let flags = self.flags;
        let gravity = if flags.gravity {
            gravity
        } else {
            Vec3::zeros()
        };
        let medium = if flags.spring || flags.damper {
            medium
        } else {
            crate::model::Medium::default()
        };
        builder
            .set_gravity(gravity)
            .and_then(|b| b.set_medium(medium))
            .map_err(|e| self.error("<option>", e.to_string()))?;
        let mut springdampers = Vec::new();
        for plan in plans.iter().skip(1) {
            let r = if plan.massless {
                builder.add_massless_body(&plan.name, plan.parent, plan.joint, plan.placement)
            } else {
                builder.add_body(
                    &plan.name,
                    plan.parent,
                    plan.joint,
                    plan.placement,
                    plan.inertia,
                )
            };
            let body = r.map_err(|e| self.error(&plan.element, e.to_string()))?;
            builder
                .set_joint_spec(body, plan.spec.clone())
                .map_err(|e| self.error(&plan.element, e.to_string()))?;
            if let Some(sd) = plan.springdamper {
                springdampers.push((body, sd));
            }
        }
        // Every MJCF body as a frame on the body that carries it (itself, or
        // the one it is welded into), with its own inertia: frame `b - 1`
        // is MJCF body `b` (MuJoCo's body id; unnamed ones are `body{b}`).
        // Then the named sites.
        for b in 1..n {
            let body = &self.bodies[b];
            let name = if body.name.is_empty() {
                format!("body{b}")
            } else {
                body.name.clone()
            };
            builder
                .add_body_frame(&name, carrier[b], from[b], body.inertia)
                .map_err(|e| self.error(&body.element, e.to_string()))?;
        }
        for b in 0..n {
            let body = &self.bodies[b];
            for site in &body.sites {
                builder
                    .add_frame(&site.name, carrier[b], from[b].mul(&site.local))
                    .map_err(|e| self.error(&body.element, e.to_string()))?;
            }
        }
        let mut visuals = Vec::new();
        // The named geoms' model indices (for `<contact><pair>`).
        let mut geom_index: HashMap<String, usize> = HashMap::new();
        for b in 0..n {
            let body = &self.bodies[b];
            for (k, g) in body.geoms.iter().enumerate() {
                if g.plane && weld[b] != 0 {
                    return Err(self.error(
                        &g.element,
                        format!(
                            "a plane is only allowed in static bodies (the world or bodies welded to it), not in {}",
                            body.element
                        ),
                    ));
                }
                // `<flag contact="disable">`: no geom collides.
                let Some(shape) = g.shape.as_ref().filter(|_| flags.contacts()) else {
                    continue;
                };
                let gname = if g.name.is_empty() {
                    let bn = if b == 0 {
                        "world"
                    } else {
                        &plans[carrier[b]].name
                    };
                    format!("{bn}/geom{k}")
                } else {
                    g.name.clone()
                };
                let gname = unique(gname, &mut used);
                let geom = builder
                    .add_geometry(
                        &gname,
                        carrier[b],
                        from[b].mul(&g.mjcf_from_geom),
                        shape.clone(),
                        g.material,
                    )
                    .map_err(|e| self.error(&g.element, e.to_string()))?;
                if b > 0 {
                    builder
                        .set_geometry_frame(geom, b - 1)
                        .map_err(|e| self.error(&g.element, e.to_string()))?;
                }
                if !g.name.is_empty() {
                    geom_index.insert(g.name.clone(), geom);
                }
            }
        }
        // What the geoms look like, colliding or not.
        for b in 0..n {
            for g in &self.bodies[b].geoms {
                if let Some((shape, rgba, triangles)) = &g.look {
                    visuals.push(crate::model::Visual {
                        body: carrier[b],
                        body_from_geom: from[b].mul(&g.mjcf_from_geom),
                        shape: shape.clone(),
                        rgba: *rgba,
                        mesh: triangles.clone(),
                    });
                }
            }
        }
        // MuJoCo's parent filter, at the level of welded groups.
        for b in 1..n {
            if weld[b] == b {
                let wp = weld[self.bodies[b].parent];
                if wp != 0 && carrier[wp] != carrier[b] {
                    builder
                        .exclude_collision(carrier[b], carrier[wp])
                        .map_err(|e| self.error(&self.bodies[b].element, e.to_string()))?;
                }
            }
        }
        let body_index = |name: &str| -> Option<usize> {
            if name == "world" {
                return Some(0);
            }
            self.bodies.iter().position(|b| b.name == name)
        };
        let top: Vec<Node> = root.children().filter(|n| n.is_element()).collect();
        for c in top.iter().filter(|n| n.has_tag_name("contact")) {
            for e in c.children().filter(|n| n.is_element()) {
                let el = element_name(&e, "");
                match e.tag_name().name() {
                    "exclude" => {
                        let mut ids = [0usize; 2];
                        for (k, attr) in ["body1", "body2"].iter().enumerate() {
                            let Some(name) = e.attribute(*attr) else {
                                return Err(self.error(&el, format!("missing attribute `{attr}`")));
                            };
                            ids[k] = body_index(name).ok_or_else(|| {
                                self.error(&el, format!("{attr}: no body named `{name}`"))
                            })?;
                        }
                        // By file body (frame `b - 1`; the world's own
                        // geoms: WORLD_FRAME), as MuJoCo names them: not
                        // every body welded into the same carrier.
                        let frame =
                            |b: usize| b.checked_sub(1).unwrap_or(crate::model::WORLD_FRAME);
                        if ids[0] != ids[1] {
                            builder
                                .exclude_frames(frame(ids[0]), frame(ids[1]))
                                .map_err(|e| self.error(&el, e.to_string()))?;
                        }
                    }
                    "pair" => {
                        let class = self.class_of(&e, "main", &el)?;
                        let get = |attr: &str| self.get(&e, &class, &["pair"], attr);
                        let mut ids = [0usize; 2];
                        for (k, attr) in ["geom1", "geom2"].iter().enumerate() {
                            let Some(name) = e.attribute(*attr) else {
                                return Err(self.error(&el, format!("missing attribute `{attr}`")));
                            };
                            // (Absent: the geom does not collide at all,
                            // `<flag contact="disable">`.)
                            let Some(&g) = geom_index.get(name) else {
                                if !flags.contacts() {
                                    break;
                                }
                                return Err(
                                    self.error(&el, format!("{attr}: no geom named `{name}`"))
                                );
                            };
                            ids[k] = g;
                        }
                        if !flags.contacts() {
                            continue;
                        }
                        let condim = self.condim(get("condim"), &el)?;
                        let friction = self.pair_friction(get("friction"), &el)?;
                        builder
                            .add_contact_pair(ids[0], ids[1], friction, condim)
                            .map_err(|err| self.error(&el, err.to_string()))?;
                    }
                    other => self.warnings.push(format!(
                        "<contact><{other}>{}: not supported, ignored",
                        name_suffix(&e)
                    )),
                }
            }
        }
        // Tendons and equalities (after the bodies, before the actuators).
        let mut idx_q = Vec::with_capacity(plans.len());
        let mut nq = 0;
        for plan in &plans {
            idx_q.push(nq);
            nq += plan.joint.nq();
        }
        let mut pending = Vec::new();
        let tendons = self.tendons_and_equalities(
            &top,
            &joint_plan,
            &|b| idx_q[b],
            &q0,
            &mut builder,
            &mut pending,
            &carrier,
            &from,
        )?;
        // Each fixed tendon's first joint's name (an actuator on it names it).
        let plan_joint: HashMap<usize, &str> = joint_plan
            .iter()
            .map(|(name, (plan, _, _))| (*plan, name.as_str()))
            .collect();
        // (None: a spatial tendon.)
        let builder_tendons: Vec<Option<&str>> = builder
            .tendons()
            .iter()
            .map(|t| t.joints.first().map(|j| plan_joint[&j.0]))
            .collect();
        // Actuators; `(actuator, dampratio)` of the servos given one.
        let mut damp_ratios = Vec::new();
        for a in top.iter().filter(|n| n.has_tag_name("actuator")) {
            for e in a.children().filter(|n| n.is_element()) {
                let tag = e.tag_name().name();
                let el = element_name(&e, "");
                if !ACTUATOR_TAGS.contains(&tag) {
                    self.warnings.push(format!(
                        "<actuator><{tag}>{}: unknown actuator type, ignored",
                        name_suffix(&e)
                    ));
                    continue;
                }
                let class = self.class_of(&e, "main", &el)?;
                let get = |attr: &str| self.get(&e, &class, ACTUATOR_TAGS, attr);
                // A servo's `dampratio`, turned into its kv once the model is built.
                let mut damp_ratio = None;
                // MuJoCo's force = gain·ctrl + bias₀ + bias₁·length + bias₂·velocity.
                let scalar = |attr: &str, default: f64| -> Result<f64, ModelFileError> {
                    match get(attr) {
                        Some(s) => self.fixed::<1>(s, attr, &el).map(|[x]| x),
                        None => Ok(default),
                    }
                };
                let (gain, bias, dynamics) = match tag {
                    "motor" => (1.0, [0.0; 3], ActuatorDynamics::None),
                    "position" => {
                        let kp = scalar("kp", 1.0)?;
                        let kv = self.servo_damping(&e, &get, &el, &mut damp_ratio)?;
                        // MuJoCo: a positive time constant makes it a
                        // first-order filter integrated exactly.
                        let timeconst = scalar("timeconst", 0.0)?;
                        let dynamics = if timeconst > 0.0 {
                            ActuatorDynamics::FilterExact(timeconst)
                        } else {
                            ActuatorDynamics::None
                        };
                        (kp, [0.0, -kp, -kv], dynamics)
                    }
                    "velocity" => {
                        let kv = scalar("kv", 1.0)?;
                        (kv, [0.0, 0.0, -kv], ActuatorDynamics::None)
                    }
                    "intvelocity" => {
                        // An integrated velocity command driving a position servo.
                        let kp = scalar("kp", 1.0)?;
                        let kv = self.servo_damping(&e, &get, &el, &mut damp_ratio)?;
                        (kp, [0.0, -kp, -kv], ActuatorDynamics::Integrator)
                    }
                    "cylinder" => {
                        let area = match get("diameter") {
                            Some(s) => {
                                let [d] = self.fixed::<1>(s, "diameter", &el)?;
                                std::f64::consts::FRAC_PI_4 * d * d
                            }
                            None => scalar("area", 1.0)?,
                        };
                        let mut bias = [0.0; 3];
                        if let Some(s) = get("bias") {
                            bias = self.fixed::<3>(s, "bias", &el)?;
                        }
                        let timeconst = scalar("timeconst", 1.0)?;
                        (area, bias, ActuatorDynamics::Filter(timeconst))
                    }
                    "general" => {
                        let gaintype = get("gaintype").unwrap_or("fixed");
                        let biastype = get("biastype").unwrap_or("none");
                        let dyntype = get("dyntype").unwrap_or("none");
                        // Name only what is unsupported.
                        let mut unsupported = Vec::new();
                        if gaintype != "fixed" {
                            unsupported.push(format!("gaintype `{gaintype}` (only `fixed`)"));
                        }
                        if !matches!(biastype, "none" | "affine") {
                            unsupported
                                .push(format!("biastype `{biastype}` (only `none` or `affine`)"));
                        }
                        if !matches!(dyntype, "none" | "integrator" | "filter" | "filterexact") {
                            unsupported.push(format!(
                                "dyntype `{dyntype}` (only `none`, `integrator`, `filter` and `filterexact`)"
                            ));
                        }
                        if !unsupported.is_empty() {
                            self.warnings.push(format!(
                                "{el}: a general actuator with {} is not supported, not mapped",
                                unsupported.join(" and ")
                            ));
                            continue;
                        }
                        let prm = |attr: &str| -> Result<[f64; 3], ModelFileError> {
                            let mut out = [0.0; 3];
                            if let Some(s) = get(attr) {
                                let v = self.list(s, attr, &el)?;
                                for (o, x) in out.iter_mut().zip(v) {
                                    *o = x;
                                }
                            } else if attr != "biasprm" {
                                out[0] = 1.0;
                            }
                            Ok(out)
                        };
                        let gain = prm("gainprm")?[0];
                        let bias = if biastype == "affine" {
                            prm("biasprm")?
                        } else {
                            [0.0; 3]
                        };
                        let tau = prm("dynprm")?[0];
                        let dynamics = match dyntype {
                            "integrator" => ActuatorDynamics::Integrator,
                            "filter" => ActuatorDynamics::Filter(tau),
                            "filterexact" => ActuatorDynamics::FilterExact(tau),
                            _ => ActuatorDynamics::None,
                        };
                        (gain, bias, dynamics)
                    }
                    _ => {
                        self.warnings.push(format!(
                            "{el}: <{tag}> actuators are not supported (motor, position, velocity, intvelocity, cylinder and general are), not mapped"
                        ));
                        continue;
                    }
                };
                if let Some(d) = get("actdim")
                    && d.trim()
                        != if dynamics == ActuatorDynamics::None {
                            "0"
                        } else {
                            "1"
                        }
                {
                    self.warnings.push(format!(
                        "{el}: actdim `{d}` is not supported (one activation per actuator with dynamics), not mapped"
                    ));
                    continue;
                }
                // The transmission: a joint, or a tendon (a fixed one
                // through its first joint, a spatial one through the
                // world's: see `Actuator::tendon`).
                let (jname, tendon) = match (e.attribute("joint"), e.attribute("tendon")) {
                    (Some(j), _) => (j, None),
                    (None, Some(t)) => match tendons.get(t) {
                        Some(&index) => (builder_tendons[index].unwrap_or(""), Some(index)),
                        None => return Err(self.error(&el, format!("unknown tendon `{t}`"))),
                    },
                    (None, None) => {
                        let trn = ["site", "body", "jointinparent", "cranksite"]
                            .into_iter()
                            .find(|t| e.attribute(*t).is_some())
                            .unwrap_or("no");
                        self.warnings.push(format!(
                            "{el}: {trn} transmission not supported (only joints and tendons), not mapped"
                        ));
                        continue;
                    }
                };
                // (A spatial tendon's actuator drives no joint of its own.)
                let plan = if tendon.is_some() && jname.is_empty() {
                    WORLD
                } else {
                    let Some((plan, kind, _)) = joint_plan.get(jname) else {
                        return Err(self.error(&el, format!("unknown joint `{jname}`")));
                    };
                    if !matches!(kind, JointKind::Hinge | JointKind::Slide) {
                        self.warnings.push(format!(
                            "{el}: motors on {kind:?} joints are not supported (only hinge and slide), not mapped"
                        ));
                        continue;
                    }
                    *plan
                };
                let gear = match get("gear") {
                    Some(s) => {
                        let g = self.list(s, "gear", &el)?;
                        if g.is_empty() || g.len() > 6 {
                            return Err(self.error(
                                &el,
                                format!("`gear` needs 1 to 6 numbers, got {}", g.len()),
                            ));
                        }
                        g[0]
                    }
                    None => 1.0,
                };
                // `{name}range` with `{name}limited` (auto: limited iff a
                // range is given): the range where limited and `wanted`,
                // refused when empty.
                let limited_range = |name: &str, wanted: bool| {
                    let (r_attr, l_attr) = (format!("{name}range"), format!("{name}limited"));
                    let range = match get(&r_attr) {
                        Some(s) => Some(self.fixed::<2>(s, &r_attr, &el)?),
                        None => None,
                    };
                    let limited = match self.tristate(get(&l_attr), &l_attr, &el)? {
                        Some(l) => l,
                        None => self.autolimits && range.is_some(),
                    };
                    if !(limited && wanted) {
                        return Ok(None);
                    }
                    let r = range.unwrap_or([0.0, 0.0]);
                    if r[0] >= r[1] {
                        return Err(self.error(
                            &el,
                            format!("{r_attr} lower must be below upper, got {} {}", r[0], r[1]),
                        ));
                    }
                    Ok(Some((r[0], r[1])))
                };
                let ctrl_range = limited_range("ctrl", true)?;
                let force_limited = match self.tristate(get("forcelimited"), "forcelimited", &el)? {
                    Some(l) => l,
                    None => self.autolimits && get("forcerange").is_some(),
                };
                let force_range = match (force_limited, get("forcerange")) {
                    (false, _) => None,
                    (true, Some(s)) => {
                        let r = self.fixed::<2>(s, "forcerange", &el)?;
                        Some((r[0], r[1]))
                    }
                    (true, None) => None,
                };
                let act_range = limited_range("act", dynamics != ActuatorDynamics::None)?;
                let act_early = match get("actearly") {
                    Some(s) => self.boolean(s, "actearly", &el)?,
                    None => false,
                };
                let index = builder
                    .add_actuator(Actuator {
                        name: e
                            .attribute("name")
                            .or(e.attribute("tendon"))
                            .unwrap_or(jname)
                            .to_string(),
                        joint: plan,
                        dof: 0,
                        gear,
                        gain,
                        bias,
                        ctrl_range,
                        force_range,
                        tendon,
                        dynamics,
                        act_range,
                        act_early,
                        act: None,
                    })
                    .map_err(|err| self.error(&el, err.to_string()))?;
                if let Some(ratio) = damp_ratio {
                    damp_ratios.push((index, ratio));
                }
            }
        }
        let mut model = builder
            .build()
            .map_err(|e| self.error("<mujoco>", e.to_string()))?;
        springdamper_gains(&mut model, &q0, &springdampers, flags.spring, flags.damper);
        dampratio_gains(&mut model, &q0, &damp_ratios);
        let mocap_of = self.mocap_bodies(&mut model, &from);
        let placed = super::constraints::Placement {
            carrier: &carrier,
            from: &from,
            mocap: &mocap_of,
        };
        let notes = super::constraints::place_body_equalities(&mut model, &q0, &pending, &placed)
            .map_err(|(el, reason)| self.error(&el, reason))?;
        self.warnings.extend(notes);
        let cx = super::sensors::SensorContext {
            model: &model,
            carrier: &carrier,
            from: &from,
            joints: &joint_plan,
        };
        let sensors = self.sensors(&top, &cx)?;
        let cameras = self.cameras(&cx, &q0)?;
        (model.sensors, model.cameras) = (sensors, cameras);
        model.visuals = visuals;
        if (model.sensors.iter())
            .any(|s| matches!(s.kind, crate::model::SensorKind::Rangefinder { .. }))
        {
            model.ray_targets = self.ray_targets(&carrier, &from);
        }

        // Warnings gathered along the way.
        for (attr, joints) in &self.unmodelled {
            let what = if *attr == "frictionloss" {
                "(dry joint friction) is not simulated on free joints, ignored"
            } else {
                "is not modelled by moreau, ignored"
            };
            self.warnings.push(format!(
                "joint `{attr}` {what} on {} joint(s): {}",
                joints.len(),
                joints.join(", ")
            ));
        }
        self.sliding_only(&mut model);
        // MuJoCo lets `qpos0` (every joint at 0, or at its `ref`) lie beyond a
        // joint's range; its soft limit then pushes the joint back over a few
        // tens of milliseconds, moreau's rigid stop within a few steps: the
        // first motions differ. Said, so that a user starts where both agree.
        let outside: Vec<String> = model
            .limited_joints()
            .filter(|(j, _, _)| {
                matches!(
                    model.joint_type[*j],
                    JointType::Revolute(_) | JointType::Prismatic(_)
                )
            })
            .filter_map(|(j, name, (lo, hi))| {
                let x = q0[model.joint_idx_q[j]];
                (x < lo || x > hi).then(|| format!("`{name}` at {x} outside [{lo}, {hi}]"))
            })
            .collect();
        if !outside.is_empty() {
            self.warnings.push(format!(
                "qpos0 lies outside the range of {} joint(s), which a rigid stop pushes back at once (MuJoCo's soft limit takes tens of ms); start inside the ranges to compare with MuJoCo: {}",
                outside.len(),
                outside.join(", ")
            ));
        }
        self.warnings.extend(super::overlaps::warning(&model, &q0));
        let mjcf_bodies = (0..n)
            .map(|b| MjcfBody {
                name: self.bodies[b].name.clone(),
                body: carrier[b],
                body_from_mjcf: from[b],
            })
            .collect();
        Ok(MjcfModel {
            q0: DVector::from_vec(q0),
            model,
            timestep,
            bodies: n,
            mjcf_bodies,
            warnings: self.warnings,
        })
    }
}

/// MuJoCo's `springdamper="τ ζ"`: the dof's stiffness and damping set so
/// that it is a mass-spring-damper of time constant `τ` and damping ratio
/// `ζ` in MuJoCo's `solref` convention, `k = m/(τζ)²`, `b = 2m/τ`, with
/// the dof's mass `m = 1/(M⁻¹)ᵢᵢ` at `qpos0`, armature included (MuJoCo's
/// `dof_invweight0`). A switched-off spring or damper flag keeps its zero.
fn springdamper_gains(
    model: &mut Model,
    q0: &[f64],
    joints: &[(usize, (f64, f64))],
    spring: bool,
    damper: bool,
) {
    if joints.is_empty() {
        return;
    }
    let Some((_, inverse)) = inverse_mass_matrix(model, q0) else {
        return;
    };
    for &(body, (tau, zeta)) in joints {
        let dof = model.joint_idx_v[body];
        let mass = 1.0 / inverse[(dof, dof)];
        if spring {
            model.dof_stiffness[dof] = mass / (tau * zeta).powi(2);
        }
        if damper {
            model.dof_damping[dof] = 2.0 * mass / tau;
        }
    }
}

impl Parser<'_, '_, '_> {
    /// With [`MjcfOptions::sliding_friction_only`], every `condim` 4 or 6
    /// (torsional, and rolling, friction) taken as 3, a warning naming the
    /// pairs of geoms that may collide with it.
    fn sliding_only(&mut self, model: &mut Model) {
        if !self.sliding_friction_only {
            return;
        }
        let ng = model.geometries.len();
        let name = |g| super::overlaps::geom_label(model, g);
        let pairs: Vec<String> = (0..ng)
            .flat_map(|a| (a + 1..ng).map(move |b| (a, b)))
            .filter(|&(a, b)| model.can_collide(a, b))
            .filter_map(|(a, b)| {
                let condim = model.geometry_contact(a, b).2;
                (condim > 3).then(|| format!("{} and {} (condim {condim})", name(a), name(b)))
            })
            .collect();
        for g in &mut model.geometries {
            g.material.condim = g.material.condim.min(3);
        }
        for p in &mut model.contact_pairs {
            p.condim = p.condim.min(3);
        }
        if pairs.is_empty() {
            return;
        }
        let shown = pairs.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
        let more = match pairs.len() {
            n if n > 6 => format!(" and {} more", n - 6),
            _ => String::new(),
        };
        self.warnings.push(format!(
            "condim 4 and 6 taken as 3 (sliding_friction_only): no torsional or rolling friction between {} pair(s) of geoms: {shown}{more}",
            pairs.len()
        ));
    }
}

/// The kinematics and `M⁻¹` at `q0`, armature included (`Data::new` takes
/// the model's); `None` if `M` is not positive definite (the builder
/// checked every body's inertia, so it is).
fn inverse_mass_matrix(
    model: &Model,
    q0: &[f64],
) -> Option<(crate::dynamics::Data, nalgebra::DMatrix<f64>)> {
    let mut data = crate::dynamics::Data::new(model);
    crate::dynamics::crba(model, &mut data, q0);
    crate::dynamics::forward_kinematics(model, &mut data, q0);
    let inverse = data.mass_matrix.clone().cholesky()?.inverse();
    Some((data, inverse))
}

/// MuJoCo's servo `dampratio` (`position`, `intvelocity`): the velocity gain
/// `kv = 2 ζ √(kp m)` that damps the servo by the ratio `ζ`, with `m` the
/// actuator's reflected inertia at `qpos0`, `1/(J M⁻¹ Jᵀ)` for its moment
/// `J` (`gear` on its dof, `gear·∂L/∂q` on a tendon; armature in `M`), as
/// MuJoCo 3.15 and later compute it. Written into the bias's velocity term.
fn dampratio_gains(model: &mut Model, q0: &[f64], ratios: &[(usize, f64)]) {
    if ratios.is_empty() {
        return;
    }
    let Some((data, inverse)) = inverse_mass_matrix(model, q0) else {
        return;
    };
    for &(a, ratio) in ratios {
        let act = &model.actuators[a];
        let mut moment = vec![0.0; model.nv];
        let mut entries = Vec::new();
        match act.tendon {
            None => entries.push((act.dof, 1.0)),
            Some(t) if model.tendons[t].is_spatial() => {
                crate::dynamics::spatial_length(
                    model,
                    &model.tendons[t].path,
                    &data,
                    1.0,
                    &mut entries,
                );
            }
            Some(t) => entries.extend(
                model.tendons[t]
                    .joints
                    .iter()
                    .map(|&(j, c)| (model.joint_idx_v[j], c)),
            ),
        }
        for (k, c) in entries {
            moment[k] += act.gear * c;
        }
        let moment = nalgebra::DVector::from_vec(moment);
        let inverse_mass = moment.dot(&(&inverse * &moment));
        let kv = if inverse_mass > 0.0 {
            2.0 * ratio * (act.gain / inverse_mass).sqrt()
        } else {
            0.0
        };
        model.actuators[a].bias[2] = -kv;
    }
}

impl<'a, 'i> Parser<'a, 'i, '_> {
    /// A servo's velocity gain: its `kv`, or 0 with its `dampratio` noted
    /// in `ratio` (the gain follows from the built model,
    /// `dampratio_gains`). The element's own attribute wins over its class's;
    /// both on one element (or one class) are refused, as MuJoCo refuses them.
    fn servo_damping(
        &self,
        e: &Node<'a, 'i>,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
        ratio: &mut Option<f64>,
    ) -> Result<f64, ModelFileError> {
        let own = (
            e.attribute("kv").is_some(),
            e.attribute("dampratio").is_some(),
        );
        let from = match own {
            (true, true) => None,
            (true, false) => Some("kv"),
            (false, true) => Some("dampratio"),
            (false, false) => match (get("kv"), get("dampratio")) {
                (Some(_), Some(_)) => None,
                (_, Some(_)) => Some("dampratio"),
                _ => Some("kv"),
            },
        };
        let Some(from) = from else {
            return Err(self.error(el, "kv and dampratio cannot both be defined".into()));
        };
        let value = match get(from) {
            Some(s) => self.fixed::<1>(s, from, el)?[0],
            None => 0.0,
        };
        if from == "kv" {
            return Ok(value);
        }
        if !(value.is_finite() && value >= 0.0) {
            return Err(self.error(el, format!("dampratio must be finite and ≥ 0, got {value}")));
        }
        *ratio = Some(value);
        Ok(0.0)
    }
}
