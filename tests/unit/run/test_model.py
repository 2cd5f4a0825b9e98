"""ResNet50's size and shapes, the tiny network's, and the learning-rate schedules."""

import numpy as np
import pytest

from perfstudy.run.model import ResNet50, TinyConvNet, count_trainable_parameters, learning_rates


def test_resnet50_has_the_reference_parameter_count_at_1000_classes():
    assert count_trainable_parameters(ResNet50(1000)) == 25_557_032


def test_output_shape_is_batch_by_classes():
    # ResNet50 alone: in PyNative mode the first op of a worker process may meet MindSpore's
    # NumPy-1.x-built extension ("Numpy init failed", an exception left set); the tiny network
    # runs compiled in a dozen training tests (tests/e2e, model=tiny_cnn)
    import mindspore as ms

    net = ResNet50(10)
    net.set_train(False)
    out = net(ms.Tensor(np.zeros((2, 3, 32, 32), np.float32)))
    assert out.shape == (2, 10)


def test_the_small_network_is_a_thousandth_of_resnet50():
    # conv 3->16 (432) + BN (32) + conv 16->32 (4608) + BN (64) + dense 32->2 (66)
    assert count_trainable_parameters(TinyConvNet(2)) == 5_202


def test_schedules():
    assert learning_rates("constant", 0.1, 3) == [0.1, 0.1, 0.1]
    cosine = learning_rates("cosine", 0.1, 5)
    assert cosine[0] == pytest.approx(0.1)
    assert cosine == sorted(cosine, reverse=True)
    assert learning_rates("step", 1.0, 4, step_gamma=0.5, step_every=2) == [1, 1, 0.5, 0.5]
    warm = learning_rates("constant", 0.1, 4, warmup_steps=2)
    assert warm == pytest.approx([0.05, 0.1, 0.1, 0.1])
    with pytest.raises(ValueError):
        learning_rates("linear", 0.1, 3)


def test_a_run_after_kernels_ran_without_set_device_keeps_their_device():
    """MindSpore refuses set_device once a kernel ran without it, even for the device it has: a
    training after another test's kernels in one process (a test worker, a notebook) must go on,
    not read 'CPU is not usable'. A fresh process, so the order is forced."""
    import subprocess
    import sys

    script = (
        "import numpy as np, mindspore as ms\n"
        "from perfstudy.common.config import compose_run_config\n"
        "from perfstudy.run.train import _setup_mindspore\n"
        "assert (ms.Tensor(np.ones(2, np.float32)) * 2).asnumpy().tolist() == [2.0, 2.0]\n"
        "_setup_mindspore(compose_run_config(['size=smoke']))\n"
        "print('device', ms.get_context('device_target'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "device CPU" in done.stdout
