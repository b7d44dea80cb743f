"""vmapped / sharded sweeps (budgets: 10 Adam steps + 4 L-BFGS iterations, k_upd 5)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cgmpinn_jax as cj

CFG = dict(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=4)), cgm={"k_upd": 5})


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_sweep_member_equals_plain_train():
    p = cj.get_problem("poisson1d", n_pde=100)
    res = cj.sweep(
        p,
        "cgmpinn",
        cj.TrainConfig(**CFG),
        seeds=[0, 1],
        grid={"beta": [0.5, 2.0]},
        quiet=True,
        shard=False,
    )
    assert res.metrics["rel_e2"].shape == (2, 2)
    assert list(res.axes) == ["seed", "beta"]
    one = cj.train(
        p, "cgmpinn", cj.TrainConfig(**CFG).replace(cgm={"beta": 2.0}), key=1, quiet=True
    )
    assert res.at(seed=1, beta=2.0)["rel_e2"] == pytest.approx(one.metrics.rel_e2, rel=1e-3)
    # the beta axis matters (different weights) and seeds give different runs
    assert not np.allclose(res.metrics["rel_e2"][0], res.metrics["rel_e2"][1])
    d = res.to_dict()
    json.dumps(d)
    assert d["axes"]["beta"] == [0.5, 2.0]


def test_sweep_rejects_static_keys():
    with pytest.raises(ValueError, match="n_components"):
        cj.sweep(
            "poisson1d",
            "cgmpinn",
            cj.TrainConfig(**CFG),
            seeds=[0],
            grid={"n_components": [2, 3]},
            quiet=True,
        )
    with pytest.raises(ValueError, match="beta"):
        cj.sweep(
            "poisson1d",
            "cgmpinn",
            cj.TrainConfig(**CFG),
            seeds=[0],
            grid={"beta": [-1.0]},
            quiet=True,
        )


SCRIPT = textwrap.dedent(
    """
    import json, jax, numpy as np
    import cgmpinn_jax as cj
    assert len(jax.devices()) == 4, jax.devices()
    p = cj.get_problem("poisson1d", n_pde=64)
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=4)), cgm={"k_upd": 5}
    )
    kw = dict(seeds=[0, 1, 2, 3], grid={"beta": [0.5, 2.0]}, quiet=True)
    a = cj.sweep(p, "cgmpinn", cfg, shard=True, **kw)
    b = cj.sweep(p, "cgmpinn", cfg, shard=False, **kw)
    print(json.dumps({"sharded": a.metrics["rel_e2"].tolist(),
                      "plain": b.metrics["rel_e2"].tolist(),
                      "n_devices": a.n_devices, "output_devices": a.output_devices,
                      "plain_devices": b.output_devices}))
    """
)


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_sharded_sweep_matches_unsharded():
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu"
    )
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["n_devices"] == 4 and r["output_devices"] == 4 and r["plain_devices"] == 1
    np.testing.assert_allclose(r["sharded"], r["plain"], rtol=1e-4)
