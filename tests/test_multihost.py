"""Multi-host sweeps: two processes joined by jax.distributed (localhost, CPU, 2 devices each)
train one sweep whose member axis spans all 4 devices; both must return the same metrics as
an unsharded sweep in one process."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

WORKER = textwrap.dedent(
    """
    import json, sys, jax
    port, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    jax.distributed.initialize(
        coordinator_address=f"localhost:{port}", num_processes=2, process_id=pid,
        local_device_ids=[0, 1],
    )
    import cgmpinn_jax as cj
    assert jax.process_count() == 2 and len(jax.devices()) == 4 and len(jax.local_devices()) == 2
    p = cj.get_problem("poisson1d", n_pde=64)
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=4)), cgm={"k_upd": 5}
    )
    kw = dict(seeds=[0, 1, 2], grid={"beta": [0.5, 2.0]}, quiet=True)
    a = cj.sweep(p, "cgmpinn", cfg, shard=True, **kw)
    with open(out, "w") as f:
        json.dump({"rel_e2": a.metrics["rel_e2"].tolist(), "e_loss": a.metrics["e_loss"].tolist(),
                   "n_devices": a.n_devices, "output_devices": a.output_devices,
                   "lbfgs_status": a.statuses["lbfgs"].tolist()}, f)
    jax.distributed.shutdown()
    """
)

PLAIN = textwrap.dedent(
    """
    import json, cgmpinn_jax as cj
    p = cj.get_problem("poisson1d", n_pde=64)
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=4)), cgm={"k_upd": 5}
    )
    b = cj.sweep(
        p, "cgmpinn", cfg, seeds=[0, 1, 2], grid={"beta": [0.5, 2.0]}, quiet=True, shard=False
    )
    print(json.dumps({"rel_e2": b.metrics["rel_e2"].tolist(),
                      "e_loss": b.metrics["e_loss"].tolist()}))
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_two_process_sweep_matches_unsharded(tmp_path):
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu"
    )
    port = _free_port()
    outs = [tmp_path / f"p{i}.json" for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(port), str(i), str(outs[i])],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        logs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (_, err) in zip(procs, logs):
        assert p.returncode == 0, err[-3000:]
    env1 = dict(os.environ, JAX_PLATFORMS="cpu")
    plain = subprocess.run(
        [sys.executable, "-c", PLAIN], env=env1, capture_output=True, text=True, timeout=600
    )
    assert plain.returncode == 0, plain.stderr[-3000:]
    ref = json.loads(plain.stdout.strip().splitlines()[-1])
    for out in outs:  # every process returns the whole (gathered) result
        r = json.loads(out.read_text())
        assert r["n_devices"] == 4 and r["output_devices"] == 4
        assert np.asarray(r["rel_e2"]).shape == (
            3,
            2,
        )  # 6 members on 4 devices: padded to 8, pad dropped
        np.testing.assert_allclose(r["rel_e2"], ref["rel_e2"], rtol=1e-4)
        np.testing.assert_allclose(r["e_loss"], ref["e_loss"], rtol=1e-4)
