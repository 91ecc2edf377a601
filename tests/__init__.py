import pytest

# tests/support's helpers assert too: their failures explain themselves like a test's own
pytest.register_assert_rewrite("tests.support")
