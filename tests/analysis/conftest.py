import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Every test session parses cold into its own cache (the cache is tested explicitly)."""
    import os

    old = os.environ.get("CODEMOD_CACHE_DIR")
    os.environ["CODEMOD_CACHE_DIR"] = str(tmp_path_factory.mktemp("codemod-cache"))
    yield
    if old is None:
        os.environ.pop("CODEMOD_CACHE_DIR", None)
    else:
        os.environ["CODEMOD_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def analyses():
    from codemod.analysis.golden import CASES, analyze_case

    return {case: analyze_case(case) for case in CASES}
