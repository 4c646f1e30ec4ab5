"""Launch file -> resolved node commands, with the semantics of ROS 2's XML frontend for our subset.

Two passes, as in ROS 2: first the whole file is checked (elements, attributes, substitution syntax), so a
mistake in a branch that is switched off is still reported; then the actions run in document order with
scoped launch configurations, and each enabled `<node>` becomes a NodeSpec. Anything outside the subset
(DESIGN.md, "Why XML launch files and our own launcher") is an error rather than being ignored, so a file
that `hgpo launch` accepts means the same to `ros2 launch`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.packages import package_executable
from ros_nodes.launcher.spec import OUTPUTS, NodeSpec, ParamFile, ParamValue
from ros_nodes.launcher.substitution import Template, parse_template, resolve, resolve_words

_NODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAMESPACE = re.compile(r"/|(/[A-Za-z_][A-Za-z0-9_]*)+")
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def parse_cli_args(words: Sequence[str]) -> dict[str, str]:
    """The `name:=value` words of a command line, as `ros2 launch` takes them; a later one wins."""
    args: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition(":=")
        if not sep or not name:
            raise LaunchError(f"expected a launch argument as name:=value, got {word!r}")
        args[name] = value
    return args


def parse_launch_file(
    path: Path, args: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> list[NodeSpec]:
    """Check and run the launch file at `path` with launch arguments `args`; return its enabled nodes.

    `environ` (default: os.environ) answers `$(env)`. Packages resolve through the ament index.
    Raises LaunchError naming the file, line and element on anything the launcher cannot run.
    """
    root = _checked_root(path)
    given = dict(args or {})
    declared = _declared_args(root)
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise LaunchError(
            f"{path}: unknown launch argument(s) {', '.join(unknown)}; it declares:\n{_usage(declared)}"
        )
    run = _Run(os.environ if environ is None else environ)
    run.actions(root.children, _Scope(given))
    return run.nodes


def describe_arguments(path: Path) -> str:
    """The file's launch arguments with defaults and descriptions, as `ros2 launch --show-args` lists them."""
    return _usage(_declared_args(_checked_root(path)))


def _checked_root(path: Path) -> _Element:
    root = _read_xml(path)
    if root.tag != "launch":
        raise root.fail("the root element must be <launch>")
    _check(root)
    return root


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    where: str  # FILE:LINE
    children: list[_Element] = field(default_factory=list)
    templates: dict[str, Template] = field(default_factory=dict)  # parsed values of substituted attributes

    def fail(self, what: str) -> LaunchError:
        return LaunchError(f"{self.where}: <{self.tag}>: {what}")


def _read_xml(path: Path) -> _Element:
    """Elements with their line numbers (ElementTree does not keep them)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LaunchError(f"cannot read launch file {path}: {error.strerror}") from None
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    roots: list[_Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = _Element(tag, attrs, f"{path}:{parser.CurrentLineNumber}")
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: stack.pop()
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise LaunchError(f"{path}: not well-formed XML: {error}") from None
    return roots[0]


@dataclass(frozen=True)
class _Schema:
    """What ROS 2 accepts for an element and we support; attributes not in `literal` take substitutions."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    literal: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    check: Callable[[_Element], None] | None = None


def _check_param(element: _Element) -> None:
    if set(element.attrs) not in ({"from"}, {"name", "value"}):
        raise element.fail('a parameter is either from="FILE.yaml" or name="NAME" value="VALUE"')


def _check_node(element: _Element) -> None:
    on_exit = element.attrs.get("on_exit", "shutdown")
    if on_exit != "shutdown":
        raise element.fail(f'on_exit="{on_exit}" is not supported; the only supported value is "shutdown"')
    for part in parse_template(element.attrs.get("ros_args", "")):
        if isinstance(part, str):
            try:
                shlex.split(part)
            except ValueError as error:
                raise element.fail(f"ros_args: {error} in {element.attrs['ros_args']!r}") from None


_CONDITIONS = ("if", "unless")
_ACTIONS = ("arg", "let", "set_env", "group", "push-ros-namespace", "node")
_SCHEMAS: dict[str, _Schema] = {
    "launch": _Schema(children=_ACTIONS),
    "arg": _Schema(("name",), ("default", "description", *_CONDITIONS), literal=("name", "description")),
    "let": _Schema(("name", "value"), _CONDITIONS),
    "set_env": _Schema(("name", "value"), _CONDITIONS),
    "group": _Schema(optional=_CONDITIONS, children=_ACTIONS),
    "push-ros-namespace": _Schema(("namespace",), _CONDITIONS),
    "node": _Schema(
        ("pkg", "exec"),
        ("name", "namespace", "output", "on_exit", "ros_args", *_CONDITIONS),
        literal=("on_exit",),
        children=("param", "remap"),
        check=_check_node,
    ),
    "param": _Schema(optional=("name", "value", "from"), check=_check_param),
    "remap": _Schema(("from", "to")),
}


def _check(element: _Element) -> None:
    """Validate `element` and its subtree against the subset and parse its substitutions."""
    schema = _SCHEMAS[element.tag]
    allowed = schema.required + schema.optional
    for attr in element.attrs:
        if attr not in allowed:
            hint = (
                " (ros2 launch rejects it here too; put the condition on the <node> or a <group>)"
                if attr in _CONDITIONS
                else ""
            )
            supported = ", ".join(allowed) or "none"
            raise element.fail(f"attribute '{attr}' is not supported{hint}; supported: {supported}")
    for attr in schema.required:
        if attr not in element.attrs:
            raise element.fail(f"missing required attribute '{attr}'")
    if all(cond in element.attrs for cond in _CONDITIONS):
        raise element.fail("use either if or unless, not both")
    for child in element.children:
        if child.tag not in schema.children:
            inside = (
                f"supported inside <{element.tag}>: {', '.join(schema.children)}"
                if schema.children
                else f"<{element.tag}> takes no child elements"
            )
            raise child.fail(f"element not supported by hgpo launch here; {inside}")
    if schema.check is not None:
        schema.check(element)
    for attr, value in element.attrs.items():
        if attr not in schema.literal:
            try:
                element.templates[attr] = parse_template(value)
            except LaunchError as error:
                raise element.fail(f"{attr}: {error}") from None
    for child in element.children:
        _check(child)


def _declared_args(element: _Element) -> dict[str, _Element]:
    """Every `<arg>` of the file, conditional or not, as `ros2 launch --show-args` lists them."""
    found: dict[str, _Element] = {}
    for child in element.children:
        if child.tag == "arg":
            found.setdefault(child.attrs["name"], child)
        for name, arg in _declared_args(child).items():
            found.setdefault(name, arg)
    return found


def _usage(declared: dict[str, _Element]) -> str:
    """One line per argument: name:=default (or <required>) and its description, in columns."""
    usages = {
        f"{name}:={arg.attrs.get('default', '<required>')}": arg.attrs.get("description", "")
        for name, arg in declared.items()
    }
    width = max(map(len, usages), default=0)
    return "\n".join(f"  {usage:<{width}}  {about}".rstrip() for usage, about in usages.items()) or "  (none)"


def _join_namespace(base: str | None, namespace: str | None) -> str | None:
    """launch_ros's prefix_namespace + make_namespace_absolute: a relative namespace goes under `base`."""
    if namespace is None:
        combined = base
    elif not base or namespace.startswith("/"):
        combined = namespace
    else:
        combined = ("" if base == "/" else base) + "/" + namespace
    if combined is None:
        return None
    if combined != "/":
        combined = combined.rstrip("/")
    return combined if combined.startswith("/") else "/" + combined


@dataclass
class _Scope:
    """Launch configurations, ROS namespace and `<set_env>` values in effect; a <group> works on a copy, as
    ROS 2 scopes them (its group pushes and pops both the configurations and the environment)."""

    configs: dict[str, str]
    namespace: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def child(self) -> _Scope:
        return _Scope(dict(self.configs), self.namespace, dict(self.env))


class _Run:
    """Executes checked actions in document order, collecting the nodes they start."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.nodes: list[NodeSpec] = []
        self._handlers: dict[str, Callable[[_Element, _Scope], None]] = {
            "arg": self._arg,
            "let": self._let,
            "set_env": self._set_env,
            "group": self._group,
            "push-ros-namespace": self._push_namespace,
            "node": self._node,
        }

    def actions(self, elements: list[_Element], scope: _Scope) -> None:
        for element in elements:
            if self._enabled(element, scope):
                self._handlers[element.tag](element, scope)

    def _value(self, element: _Element, attr: str, scope: _Scope) -> str:
        try:
            return resolve(element.templates[attr], scope.configs, self._environ(scope))
        except LaunchError as error:
            raise element.fail(f"{attr}: {error}") from None

    def _words(self, element: _Element, attr: str, scope: _Scope) -> tuple[str, ...]:
        if attr not in element.templates:
            return ()
        try:
            return tuple(resolve_words(element.templates[attr], scope.configs, self._environ(scope)))
        except LaunchError as error:
            raise element.fail(f"{attr}: {error}") from None

    def _environ(self, scope: _Scope) -> Mapping[str, str]:
        """What `$(env)` reads: the values `<set_env>` gave in this scope over the launcher's environment."""
        return {**self.environ, **scope.env}

    def _optional(self, element: _Element, attr: str, scope: _Scope) -> str | None:
        return self._value(element, attr, scope) if attr in element.templates else None

    def _enabled(self, element: _Element, scope: _Scope) -> bool:
        for attr, wanted in (("if", True), ("unless", False)):
            text = self._optional(element, attr, scope)
            if text is not None:
                if text.lower() not in _TRUE + _FALSE:
                    raise element.fail(f"{attr}={text!r} after substitution; expected true, false, 1 or 0")
                return (text.lower() in _TRUE) == wanted
        return True

    def _arg(self, element: _Element, scope: _Scope) -> None:
        name = element.attrs["name"]
        if name in scope.configs:
            return
        if "default" not in element.templates:
            about = f" ({element.attrs['description']})" if "description" in element.attrs else ""
            raise element.fail(
                f"launch argument '{name}'{about} has no default and was not given; pass {name}:=VALUE"
            )
        scope.configs[name] = self._value(element, "default", scope)

    def _let(self, element: _Element, scope: _Scope) -> None:
        scope.configs[self._value(element, "name", scope)] = self._value(element, "value", scope)

    def _set_env(self, element: _Element, scope: _Scope) -> None:
        name = self._value(element, "name", scope)
        if not name or "=" in name:
            raise element.fail(f"name {name!r} is not an environment variable name (non-empty, without '=')")
        scope.env[name] = self._value(element, "value", scope)

    def _group(self, element: _Element, scope: _Scope) -> None:
        self.actions(element.children, scope.child())

    def _push_namespace(self, element: _Element, scope: _Scope) -> None:
        scope.namespace = self._namespace(element, scope.namespace, self._value(element, "namespace", scope))

    @staticmethod
    def _namespace(element: _Element, base: str | None, namespace: str | None) -> str | None:
        joined = _join_namespace(base, namespace)
        if joined is not None and not _NAMESPACE.fullmatch(joined):
            raise element.fail(
                f"namespace {joined!r} is not a valid ROS namespace "
                "(tokens of letters, digits and '_' that do not start with a digit)"
            )
        return joined

    def _node(self, element: _Element, scope: _Scope) -> None:
        package = self._value(element, "pkg", scope)
        executable = self._value(element, "exec", scope)
        name = self._optional(element, "name", scope)
        if name is not None and not _NODE_NAME.fullmatch(name):
            raise element.fail(
                f"name {name!r} is not a valid node name (letters, digits and '_', not starting with a digit)"
            )
        namespace = self._namespace(element, scope.namespace, self._optional(element, "namespace", scope))
        output = self._optional(element, "output", scope)
        if output is None:
            output = "log"  # ROS 2's default: stdout to the log file only
        elif output not in OUTPUTS:
            raise element.fail(f"output={output!r} is not supported; supported: {', '.join(OUTPUTS)}")
        params: list[ParamFile | ParamValue] = []
        remaps: list[tuple[str, str]] = []
        for child in element.children:
            if child.tag == "remap":
                remaps.append((self._value(child, "from", scope), self._value(child, "to", scope)))
            elif "from" in child.templates:
                params.append(ParamFile(self._params_file(child, scope)))
            else:
                value = self._value(child, "value", scope)
                params.append(ParamValue(self._value(child, "name", scope), value))
        try:
            executable_path = package_executable(package, executable)
        except LaunchError as error:
            raise element.fail(str(error)) from None
        self.nodes.append(
            NodeSpec(
                package=package,
                executable=executable,
                executable_path=executable_path,
                name=name,
                namespace=namespace,
                params=tuple(params),
                remaps=tuple(remaps),
                output=output,
                on_exit_shutdown="on_exit" in element.attrs,
                ros_args=self._words(element, "ros_args", scope),
                env=tuple(scope.env.items()),
            )
        )

    def _params_file(self, element: _Element, scope: _Scope) -> Path:
        # ROS 2 only warns about a missing file and starts the node without it; a typo should stop us.
        path = Path(os.path.abspath(self._value(element, "from", scope)))
        if not path.is_file():
            raise element.fail(f"parameter file {path} does not exist")
        return path
