"""tests/image's fixtures (the archive read, unpacked with umoci and run under runc), for the arm64 archive that
tests/release/test_arm64.py's own `archive` fixture names."""
from tests.image.test_image import bundle, container, image, layout  # noqa: F401
