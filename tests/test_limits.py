"""The size limits of the product code, over every package, counted in code lines: no file over 600 code lines, no
function over 80 and no function taking more than 7 parameters in pipelines/, transforms/, serving/, schemas/,
stores/ and commands/; and no module reaching into another module's private names.

Code lines: a line that holds code. Blank lines, comment lines and docstrings (the first string of a module, class
or function) do not count, so a limit never decides whether a comment or a docstring is written, and squeezing
prose never buys room for code. A longer parameter list is a state or a setting that wants a typed value (the
ranking cycle's context, the writer's state, a job's resolved options).

Private names: ``from x import _y`` and ``x._y`` where ``x`` is another module of the product are flagged. A name
with a leading underscore is its module's own; a second module that needs it wants it public (and then says so in
its docstring), or lives in the same module. Dunder names (``__version__``) are public.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "transforms", "serving", "schemas", "stores", "commands")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 7
_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller passes: positional, keyword-only, ``*args`` and ``**kwargs`` (one each); a method's
    ``self`` or ``cls`` is not counted."""
    a = node.args
    positional = [x.arg for x in a.posonlyargs + a.args]
    n = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - 1 if positional and positional[0] in ("self", "cls") else n


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(text: str, tree: ast.Module | None = None) -> set[int]:
    """The numbers of the lines of ``text`` that hold code: a token other than a comment, and not a docstring."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in _NOT_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - _docstring_lines(tree or ast.parse(text))


def _modules(root: Path):
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def oversized(root: Path = ROOT) -> list[str]:
    found = []
    for name, text in _modules(root):
        tree = ast.parse(text)
        code = code_lines(text, tree)
        if len(code) > MAX_FILE_LINES:
            found.append(f"{name}: {len(code)} code lines")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = sum(1 for n in range(node.lineno, node.end_lineno + 1) if n in code)
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} code lines")
                if parameter_count(node) > MAX_PARAMETERS:
                    found.append(f"{name}:{node.lineno} {node.name}: {parameter_count(node)} parameters")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_of(relpath: str) -> str:
    parts = relpath[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(root: Path, dotted: str) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def private_imports(source: str, relpath: str, root: Path = ROOT) -> list[str]:
    """``path:line: what`` for every use in ``source`` (the module at ``relpath``) of a private name of another
    product module: ``from x import _y`` (``_y`` not itself a module) and ``x._y`` on a name bound to a module by
    ``import x`` / ``import x as m`` / ``from p import x``."""
    me = _module_of(relpath)
    tops = set(PACKAGES) | {"devtools"}
    found, bound = [], {}  # local name -> the dotted module it is bound to
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in tops:
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in tops or node.module == me:
                continue
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if _is_module(root, full):
                    bound[a.asname or a.name] = full
                elif _private(a.name):
                    found.append(f"{relpath}:{node.lineno}: imports {a.name} from {node.module}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                module = ".".join([bound[value.id], *reversed(chain)])
                if module != me and _is_module(root, module):
                    found.append(f"{relpath}:{node.lineno}: uses {module}.{node.attr}")
    return found


def test_no_file_over_600_code_lines_and_no_function_over_80_code_lines_or_7_parameters_in_the_product():
    assert oversized() == []


def test_no_module_uses_another_modules_private_names():
    found = [v for name, text in _modules(ROOT) for v in private_imports(text, name)]
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_check_sees_a_planted_long_function(tmp_path):
    (tmp_path / "stores").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "stores" / "planted.py").write_text(f"def planted():\n{body}\n", encoding="utf-8")
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert oversized(tmp_path) == ["stores/planted.py:1 planted: 81 code lines"]


def test_docstrings_comments_and_blank_lines_are_not_code_lines(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    prose = "\n".join(f"    {i} lines of prose" for i in range(200))
    comments = "\n".join(f"    # comment {i}\n" for i in range(200))
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    text = f'"""Module.\n{prose}\n"""\n\n\ndef f():\n    """Doc.\n{prose}\n    """\n{comments}\n{body}\n'
    (tmp_path / "serving" / "prose.py").write_text(text, encoding="utf-8")
    assert len(text.splitlines()) > MAX_FILE_LINES
    assert oversized(tmp_path) == []
    assert len(code_lines(text)) == MAX_FUNCTION_LINES  # def + 79 assignments
    big = "\n".join(f"x{i} = (\n    {i}\n)" for i in range(MAX_FILE_LINES // 3 + 1))
    (tmp_path / "serving" / "big.py").write_text(big + "\n", encoding="utf-8")
    assert oversized(tmp_path) == [f"serving/big.py: {3 * (MAX_FILE_LINES // 3 + 1)} code lines"]


def test_the_check_counts_the_parameters_a_caller_passes(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "serving" / "planted.py").write_text(
        "def f(a, b, c, d, e, f, g):\n    pass\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g):\n        pass\n"
        "    def n(self, a, b, c, d, e, f, *args, **kwargs):\n        pass\n"
        "def h(a, /, b, *, c, d, e, f, g, x=1):\n    pass\n",
        encoding="utf-8",
    )
    assert sorted(oversized(tmp_path)) == [
        "serving/planted.py:6 n: 8 parameters",
        "serving/planted.py:8 h: 8 parameters",
    ]


def test_the_private_name_check_sees_planted_reaches(tmp_path):
    (tmp_path / "serving" / "web").mkdir(parents=True)
    for rel in ("serving/__init__.py", "serving/web/__init__.py", "serving/web/pages.py", "serving/other.py"):
        (tmp_path / rel).write_text("def _x():\n    pass\n", encoding="utf-8")
    cases = {
        "from serving.web.pages import _x\n": "imports _x from serving.web.pages",
        "import serving.web.pages\nserving.web.pages._x()\n": "uses serving.web.pages._x",
        "from serving.web import pages\npages._x()\n": "uses serving.web.pages._x",
        "import serving.web.pages as p\np._x()\n": "uses serving.web.pages._x",
        "from serving import web\nweb.pages._x()\n": "uses serving.web.pages._x",
    }
    for source, expected in cases.items():
        found = private_imports(source, "serving/other.py", tmp_path)
        assert len(found) == 1 and expected in found[0], (source, found)
    fine = (
        "from serving.web.pages import render\nfrom serving.web import __version__\n"
        "import serving.web.pages\nserving.web.pages.render()\nfrom json import _default_decoder\n"
        "self._x = 1\nfrom serving.web import pages\npages.__name__\n"
    )
    assert private_imports(fine, "serving/other.py", tmp_path) == []
    # a module's own private names are its own
    assert private_imports("from serving.other import _x\n", "serving/other.py", tmp_path) == []
