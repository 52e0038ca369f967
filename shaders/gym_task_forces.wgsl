// The contact forces of a world's last step on its body frames, for the
// task kernel (gym_task.wgsl) of a model with contacts: it reads the
// contact stage's records (resident_contacts.wgsl, group 1) as the host
// reads them back (ContactStage::read_contacts, BatchSim::contact_forces):
// the force λ/dt in the world frame at the contact's point, on geometry a
// and, opposite, on b.

// wrench += every contact of `world`'s last step, about tcom (after
// task_subtree_coms; dynamics::com_wrenches).
fn task_contact_wrenches() {
    let n = params.nworlds;
    let nc = min(bitcast<u32>(cw(CW_COUNT)), CMAX);
    let dt = wp(WP_DT, params.dt);
    for (var i = 0u; i < nc; i++) {
        let local = vec3<f32>(lambda[3u * i * n + world], lambda[(3u * i + 1u) * n + world], lambda[(3u * i + 2u) * n + world]);
        let f = frame_from_normal(c_normal(i)) * local / dt;
        let p = c_point(i);
        let at = TASK_PAIR_FRAMES + 4u * c_pair(i);
        add_wrench(tf(at), u32(tf(at + 1u)), p, f);
        add_wrench(tf(at + 2u), u32(tf(at + 3u)), p, -f);
    }
}
