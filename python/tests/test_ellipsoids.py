"""Ellipsoid contacts against MuJoCo's and against the exact answer.

An ellipsoid ("egg") lies tilted at random into the floor; a second
ellipsoid and a capsule are pressed into its upper side at random: each
placed so that its surface point with outward normal -n lies depth d below
the egg's surface point with normal n. Then the exact contact is that
normal n, a signed distance -d and the point midway between the two
surface points; moreau's must be that to rounding, and MuJoCo's within its
own collision tolerance (its GJK/EPA stops at ccd_tolerance 1e-6)."""

import numpy as np
import pytest

import moreau

mujoco = pytest.importorskip("mujoco")

SCENE = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body name="egg"><freejoint/><geom name="egg_g" type="ellipsoid" size="0.3 0.2 0.1"/></body>
    <body name="pebble" pos="3 0 1"><freejoint/><geom name="pebble_g" type="ellipsoid" size="0.05 0.15 0.1"/></body>
    <body name="stick" pos="-3 0 1"><freejoint/><geom name="stick_g" type="capsule" size="0.05 0.2"/></body>
  </worldbody>
</mujoco>
"""

EGG = np.array([0.3, 0.2, 0.1])
PEBBLE = np.array([0.05, 0.15, 0.1])


def rotation(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def ellipsoid_support(r_mat, radii, n):
    """The surface point (about the centre) whose outward normal is n."""
    d = r_mat.T @ n
    return r_mat @ (radii * radii * d / np.linalg.norm(radii * d))


def capsule_support(r_mat, half_length, radius, n):
    d = r_mat.T @ n
    return r_mat @ np.array([0.0, 0.0, half_length * np.sign(d[2])]) + radius * n


def unit_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def placements(mj, n, rng):
    qpos = np.tile(mj.qpos0, (n, 1))
    exact = {}
    for w in range(n):
        qe = unit_quaternion(rng)
        re = rotation(qe)
        lowest = ellipsoid_support(re, EGG, np.array([0.0, 0.0, -1.0]))
        centre = np.array([0.0, 0.0, -lowest[2] - rng.uniform(0.001, 0.01)])
        qpos[w, 0:7] = np.concatenate([centre, qe])
        for name, adr in (("pebble_g", 7), ("stick_g", 14)):
            normal = rng.normal(size=3)
            normal[2] = abs(normal[2]) + 0.5
            normal /= np.linalg.norm(normal)
            x = centre + ellipsoid_support(re, EGG, normal)
            q = unit_quaternion(rng)
            r = rotation(q)
            y = (
                ellipsoid_support(r, PEBBLE, -normal)
                if name == "pebble_g"
                else capsule_support(r, 0.2, 0.05, -normal)
            )
            depth = rng.uniform(0.001, 0.01)
            qpos[w, adr : adr + 7] = np.concatenate([x - normal * depth - y, q])
            exact[(w, name)] = (-depth, normal, x - normal * depth / 2)
    return qpos, exact


def test_ellipsoid_contacts_are_exact_and_match_mujocos(tmp_path):
    path = tmp_path / "eggs.xml"
    path.write_text(SCENE)
    model = moreau.load(str(path))
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    n = 40
    qpos, exact = placements(mj, n, np.random.default_rng(5))
    q, v = model.from_mujoco(qpos, np.zeros((n, mj.nv)))
    batch = moreau.BatchSim(model, n, backend="cpu1")
    batch.set_states(q, v)
    batch.step(np.zeros((n, model.nv)))  # its contacts are those of the states set
    ours = batch.contacts()
    names = model.geom_names
    worst = {"exact": 0.0, "mujoco distance": 0.0, "mujoco normal": 0.0}
    checked = 0
    for w in range(n):
        data.qpos[:] = qpos[w]
        mujoco.mj_forward(mj, data)
        mine = np.nonzero(ours["world"] == w)[0]
        for c in data.contact[: data.ncon]:
            g1 = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, c.geom1)
            g2 = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, c.geom2)
            match = [k for k in mine if {names[i] for i in ours["geoms"][k]} == {g1, g2}]
            assert len(match) == 1, (w, g1, g2)
            k = match[0]
            # MuJoCo's normal points from geom1 to geom2, moreau's from b to a.
            a = names[ours["geoms"][k][0]]
            normal = ours["normal"][k] * (-1.0 if a == g1 else 1.0)
            assert ours["distance"][k] == pytest.approx(c.dist, abs=1e-5), (w, g1, g2)
            assert np.linalg.norm(normal - c.frame[:3]) < 1e-2, (w, g1, g2)
            assert np.linalg.norm(ours["point"][k] - c.pos) < 1e-4, (w, g1, g2)
            worst["mujoco distance"] = max(worst["mujoco distance"], abs(ours["distance"][k] - c.dist))
            worst["mujoco normal"] = max(worst["mujoco normal"], np.linalg.norm(normal - c.frame[:3]))
            if "floor" in (g1, g2):
                # Against a plane both are exact: the lowest point.
                assert ours["distance"][k] == pytest.approx(c.dist, abs=1e-12)
            other = ({g1, g2} - {"egg_g"}).pop()
            if "egg_g" in (g1, g2) and (w, other) in exact:
                d, n_exact, p_exact = exact[(w, other)]
                # The exact normal points from the egg to the other.
                towards = normal * (1.0 if g1 == "egg_g" else -1.0)
                err = max(
                    abs(ours["distance"][k] - d),
                    np.linalg.norm(towards - n_exact),
                    np.linalg.norm(ours["point"][k] - p_exact),
                )
                assert err < 1e-9, (w, other, err)
                worst["exact"] = max(worst["exact"], err)
                checked += 1
    assert checked == 2 * n
    print({k: f"{x:.1e}" for k, x in worst.items()})
