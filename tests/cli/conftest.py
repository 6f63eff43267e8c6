import shutil

import pytest

from tests.host.conftest import HOST_H200, configured_host


@pytest.fixture
def configured(tmp_path):
    """A copy of the captured H200 host, with the toolkit, containerd and CDI spec configured (tests/host)."""
    root = tmp_path / "host"
    shutil.copytree(HOST_H200, root)
    configured_host(root)
    return root
