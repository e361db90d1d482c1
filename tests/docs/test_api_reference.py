"""The API reference is complete: every public name has a docstring, every parameter is
documented (Google style ``Args:``), and each module's page in docs/reference renders it.

griffe (installed with mkdocstrings) reads ``rdk`` from ``src/`` statically, as the docs
build does. "Public" means: each name in ``__all__`` of the modules below, and the public
(not ``_``-prefixed) members of the public classes, inherited ones included. An instance
attribute that stores a constructor argument of the same name is documented by that
argument's ``Args:`` entry; a dataclass field documents its constructor parameter with its
own docstring (the string after the field).

The rendering check builds docs/reference alone (with mkdocs.yml's plugins and markdown
extensions, strict) into a temporary folder once per session and looks for each object's
anchor, e.g. ``id="rdk.Consumer.stop"``, in its module's page.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra (mkdocstrings)")
yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs")

ROOT = Path(__file__).resolve().parents[2]
PAGES = {
    "rdk": "rdk",
    "rdk.aio": "aio",
    "rdk.workers": "workers",
    "rdk.offsets": "offsets",
    "rdk.stats": "stats",
    "rdk.spark": "spark",
    "rdk.testing": "testing",
    "rdk.schema_registry": "schema-registry",
}
PARAMETER_SECTIONS = {"parameters", "other parameters"}


# ---- loading --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package() -> Any:
    loader = griffe.GriffeLoader(search_paths=[str(ROOT / "src")],
                                 docstring_parser=griffe.Parser.google)
    pkg = loader.load("rdk")
    loader.resolve_aliases(implicit=False, external=None)
    return pkg


def _target(obj: Any) -> Any:
    return obj.final_target if obj.is_alias else obj


def _exports(package: Any, module: str) -> list[tuple[str, Any]]:
    mod = package if module == "rdk" else package[module.removeprefix("rdk.")]
    names = [str(getattr(e, "name", e)) for e in (mod.exports or [])]
    assert names, f"{module} has no __all__"
    return [(name, _target(mod[name])) for name in names]


def _public_members(cls: Any) -> Iterator[tuple[str, Any]]:
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        try:
            yield name, _target(member)
        except griffe.AliasResolutionError:  # inherited from outside rdk (pyspark...)
            continue


def _documented_parameters(docstring: Any) -> list[str]:
    if docstring is None:
        return []
    return [p.name.lstrip("*") for section in docstring.parsed
            if section.kind.value in PARAMETER_SECTIONS for p in section.value]


def _signature(function: Any) -> list[str]:
    return [p.name for p in function.parameters if p.name not in ("self", "cls")]


def _constructor(cls: Any) -> Any:
    """The class's ``__init__`` or ``__new__`` when rdk defines it (own or inherited)."""
    for name in ("__init__", "__new__"):
        member = cls.all_members.get(name)
        if member is None:
            continue
        try:
            member = _target(member)
        except griffe.AliasResolutionError:
            continue
        if member.path.startswith("rdk.") and _signature(member) is not None:
            return member
    return None


# ---- the checks -----------------------------------------------------------------------


def _check_function(where: str, function: Any, problems: list[str]) -> None:
    if function.docstring is None:
        problems.append(f"{where}: no docstring")
        return
    signature = [p.lstrip("*") for p in _signature(function)]
    documented = _documented_parameters(function.docstring)
    for name in signature:
        if name not in documented:
            problems.append(f"{where}: parameter {name!r} is not documented in its Args section")
    for name in documented:
        if name not in signature:
            problems.append(f"{where}: documents parameter {name!r}, which is not in its signature")


def _check_constructor(where: str, cls: Any, problems: list[str]) -> list[str]:
    """Constructor parameters are documented in the class docstring (merge_init_into_class);
    a dataclass field by its own docstring. Returns the parameter names."""
    ctor = _constructor(cls)
    if ctor is None:
        return []
    owner = ctor.parent
    docstring = cls.docstring if _documented_parameters(cls.docstring) else owner.docstring
    documented = _documented_parameters(docstring)
    signature = [p.lstrip("*") for p in _signature(ctor)]
    for name in signature:
        field = owner.members.get(name)
        if name in documented or ("dataclass" in owner.labels and field is not None
                                  and field.docstring is not None):
            continue
        problems.append(f"{where}: constructor parameter {name!r} is not documented in the "
                        "class docstring's Args section")
    for name in documented:
        if name not in signature:
            problems.append(f"{where}: documents constructor parameter {name!r}, which is not "
                            "in the signature")
    return signature


def _check_class(where: str, cls: Any, problems: list[str]) -> list[str]:
    """Checks ``cls`` and returns the members whose anchors its page must have."""
    if cls.docstring is None:
        problems.append(f"{where}: no docstring")
    _check_constructor(where, cls, problems)
    rendered = []
    for name, member in _public_members(cls):
        what = f"{where}.{name}"
        if member.is_function:
            if "property" in member.labels:
                if member.docstring is None:
                    problems.append(f"{what}: property without a docstring")
            else:
                _check_function(what, member, problems)
            rendered.append(name)
        elif member.is_attribute:
            if member.docstring is not None:
                rendered.append(name)
                continue
            owner = member.parent
            owner_ctor = _constructor(owner) if owner.is_class else None
            stored = (owner_ctor is not None and name in _signature(owner_ctor)
                      and name in _documented_parameters(owner.docstring))
            if not stored:
                problems.append(f"{what}: attribute without a docstring (and no constructor "
                                "parameter of that name documents it)")
        elif member.is_class:
            rendered += [f"{name}.{n}" for n in _check_class(what, member, problems)]
            rendered.append(name)
    return rendered


def _problems_and_anchors(package: Any) -> tuple[list[str], dict[str, list[str]]]:
    problems: list[str] = []
    anchors: dict[str, list[str]] = {}
    for module in PAGES:
        expected = anchors.setdefault(module, [])
        for name, obj in _exports(package, module):
            where = f"{module}.{name}"
            if obj.is_module:  # a submodule in __all__ (rdk.aio): it has its own page
                assert obj.path in PAGES, f"{where}: a public module without a reference page"
                continue
            expected.append(where)
            if obj.is_class:
                expected += [f"{where}.{m}" for m in _check_class(where, obj, problems)]
            elif obj.is_function:
                _check_function(where, obj, problems)
            elif obj.docstring is None:
                problems.append(f"{where}: no docstring (a constant needs the string literal "
                                "right after its assignment)")
    return problems, anchors


# ---- the docs build -------------------------------------------------------------------


@pytest.fixture(scope="session")
def reference_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/reference built alone, strict, with mkdocs.yml's plugins and extensions."""
    tmp = tmp_path_factory.mktemp("reference-site")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    shutil.copytree(ROOT / "docs" / "reference", tmp / "docs" / "reference")
    plugins = config["plugins"]
    for plugin in plugins:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT / "src")]
    nav = next(entry["API reference"] for entry in config["nav"]
               if isinstance(entry, dict) and "API reference" in entry)
    built = {
        "site_name": "rdk API reference",
        "docs_dir": str(tmp / "docs"),
        "site_dir": str(tmp / "site"),
        "theme": config["theme"],
        "plugins": plugins,
        "markdown_extensions": config["markdown_extensions"],
        "nav": nav,
        # links out of docs/reference (to the guide) cannot resolve in this partial build;
        # the full build (scripts/docs.sh) checks them
        "validation": {"omitted_files": "warn", "absolute_links": "warn",
                       "unrecognized_links": "info", "anchors": "warn",
                       "links": {"not_found": "info"}},
    }
    (tmp / "mkdocs.yml").write_text(yaml.safe_dump(built))
    result = subprocess.run(
        # not -q: quiet mode drops the warnings that --strict counts
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp / "mkdocs.yml")],
        cwd=tmp, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, f"the reference pages do not build strictly:\n{result.stderr}"
    return tmp / "site" / "reference"


# ---- tests ----------------------------------------------------------------------------


def test_every_public_name_and_parameter_is_documented(package: Any) -> None:
    problems, _ = _problems_and_anchors(package)
    assert not problems, "incomplete docstrings:\n" + "\n".join(problems)


@pytest.mark.parametrize("module", list(PAGES))
def test_the_module_page_renders_every_public_name(package: Any, reference_site: Path,
                                                   module: str) -> None:
    _, anchors = _problems_and_anchors(package)
    html = (reference_site / PAGES[module] / "index.html").read_text()
    missing = [a for a in anchors[module] if f'id="{a}"' not in html]
    assert not missing, (f"docs/reference/{PAGES[module]}.md does not render: "
                         + ", ".join(missing))


def test_the_reference_index_links_every_module_page() -> None:
    index = (ROOT / "docs" / "reference" / "index.md").read_text()
    for module, page in PAGES.items():
        assert f"[`{module}`]({page}.md)" in index, f"reference/index.md does not link {module}"
