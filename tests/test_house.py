"""House rules that keep the product tree readable: small modules, no lab inside."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def test_every_module_is_at_most_400_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "tritonbench_lab").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_probe_or_session_log_in_the_product_tree():
    product = [*(REPO / "tritonbench_lab").rglob("*.py"), *(REPO / "scripts").glob("*")]
    assert not [p for p in product if "probe" in p.name or "probe" in p.read_text()]
    assert not list((REPO / "results").rglob("logs")) and not list((REPO / "results").rglob("*.log"))


def test_the_package_imports_nothing_from_the_lab():
    lab = REPO / "lab"
    if not lab.exists():
        return
    for path in (REPO / "tritonbench_lab").rglob("*.py"):
        text = path.read_text()
        assert "from lab" not in text and "import lab" not in text, path
