"""Typed environment options (:mod:`agentworld.core.options`): ``--set`` strings coerced by each
domain's options class, unknown or ill-typed options one line naming the option and the accepted
ones, a permissive default for a domain that declares no class, and every declared option a
real parameter (with the same default) of the environment it configures."""

from __future__ import annotations

import inspect
from typing import Literal

import pytest
from agentworld.core import plugins
from agentworld.core.options import (
    AnyEnvOptions,
    EnvOptions,
    Field,
    OptionsError,
    accepted,
    env_options_of,
    parse_env_options,
    parse_options,
    type_name,
)


class Opts(EnvOptions):
    max_steps: int = Field(50, ge=1)
    timeout_s: float = Field(5.0, gt=0)
    verbose: bool = False
    sandbox: Literal["bubblewrap", "unshare"] | None = None
    root: str | None = None


class Declares:
    name = "toy"
    env_options = Opts


class Undeclared:
    name = "legacy"


def test_strings_are_coerced_to_the_declared_types():
    got = parse_env_options(Declares(), {"max_steps": "5", "timeout_s": "2.5", "verbose": "true",
                                         "sandbox": "unshare", "root": "/tmp/r"})
    assert got == {"max_steps": 5, "timeout_s": 2.5, "verbose": True, "sandbox": "unshare",
                   "root": "/tmp/r"}
    assert type(got["max_steps"]) is int and type(got["timeout_s"]) is float
    assert parse_env_options(Declares(), {"verbose": "0"}) == {"verbose": False}
    # TOML values arrive typed and stay so; only the given options are returned
    assert parse_env_options(Declares(), {"max_steps": 7}) == {"max_steps": 7}
    assert parse_env_options(Declares(), None) == {} == parse_env_options(Declares(), {})


LISTED = ("accepted: max_steps (int, default 50), timeout_s (float, default 5.0), verbose (bool, "
          "default False), sandbox ('bubblewrap' | 'unshare' | None, default None), root (str | "
          "None, default None)")


@pytest.mark.parametrize(("values", "problem"), [
    ({"bogus_option": "1"}, "unknown environment option 'bogus_option'"),
    ({"max_steps": "notanumber"}, "environment option max_steps='notanumber': Input should be a "
                                  "valid integer, unable to parse string as an integer"),
    ({"max_steps": "0"}, "environment option max_steps='0': Input should be greater than or equal to 1"),
    ({"timeout_s": "nan"}, "environment option timeout_s='nan': Input should be a finite number"),
    ({"verbose": "maybe"}, "environment option verbose='maybe': Input should be a valid boolean, unable to interpret input"),
    ({"sandbox": "docker"}, "environment option sandbox='docker': Input should be 'bubblewrap' or 'unshare'"),
])
def test_a_bad_option_is_one_line_naming_it_and_the_accepted_ones(values, problem):
    with pytest.raises(OptionsError) as err:
        parse_env_options(Declares(), values)
    assert str(err.value) == f"domain 'toy': {problem}; {LISTED}"
    assert "\n" not in str(err.value) and "errors.pydantic.dev" not in str(err.value)
    assert isinstance(err.value, ValueError)  # the CLI's main() prints ValueErrors as one line


def test_every_problem_is_named_in_the_one_line():
    with pytest.raises(OptionsError, match="^domain 'toy': environment option max_steps='x': .*; "
                       "unknown environment option 'y'; accepted: max_steps"):
        parse_env_options(Declares(), {"max_steps": "x", "y": "1"})


def test_a_domain_without_an_options_class_passes_everything_through():
    assert env_options_of(Undeclared()) is AnyEnvOptions
    assert parse_env_options(Undeclared(), {"anything": "1", "n": 2}) == {"anything": "1", "n": 2}
    assert accepted(AnyEnvOptions) == "any other"


def test_domain_base_declares_the_permissive_default():
    """A third-party ``DomainBase`` subclass that declares nothing keeps its old behaviour."""
    from agentworld.core.domain_base import DomainBase

    assert DomainBase.env_options is AnyEnvOptions


def test_a_class_without_fields_accepts_none():
    class Nothing(EnvOptions):
        pass

    with pytest.raises(OptionsError, match="^unknown option 'x'; accepted: none$"):
        parse_options(Nothing, {"x": "1"})


def test_type_names_are_short():
    assert [type_name(t) for t in (int, str | None, Literal["ansi"] | None, float)] == [
        "int", "str | None", "'ansi' | None", "float"]


DOMAINS = ["terminal", "mcp", "search", "swe", "web", "tty", "frozenlake-4x4"]
#: Options a domain's policies take, not its environment (the terminal's ``history`` policy
#: replays ``commands``; its ``make_env`` drops it).
POLICY_OPTIONS = {("terminal", "commands")}


@pytest.mark.parametrize("name", DOMAINS)
def test_each_option_is_a_parameter_of_the_real_environment_with_its_default(name):
    """An option the class declares reaches the environment's constructor under the same name,
    with the default the environment itself uses (the class is what ``--set`` documents)."""
    domain = plugins.get_domain(name)
    options = env_options_of(domain)
    assert issubclass(options, EnvOptions) and options.model_fields, name
    env_class = inspect.signature(domain.make_env).return_annotation
    module = inspect.getmodule(type(domain))
    env_class = module.__dict__[env_class] if isinstance(env_class, str) else env_class
    params = inspect.signature(env_class).parameters
    for key, field in options.model_fields.items():
        if (name, key) in POLICY_OPTIONS:
            continue
        assert key in params, f"{name}: {key} is no parameter of {env_class.__name__}"
        default = params[key].default
        if name == "search" and key == "world_seed":
            default = domain.world_seed  # make_env gives the domain's world
        assert field.default == default, (name, key)


def test_coerced_options_reach_the_environment():
    """``collect --set max_steps=5`` on mcp builds ``McpEnv(max_steps=5)`` (an int, not "5");
    a classic domain takes ``render_mode`` (it ignored every option before)."""
    mcp = plugins.get_domain("mcp")
    env = mcp.make_env(**parse_env_options(mcp, {"max_steps": "5", "timeout_s": "2"}))
    try:
        assert env.max_steps == 5 and env.timeout_s == 2.0
    finally:
        env.close()
    lake = plugins.get_domain("frozenlake-4x4")
    env = lake.make_env(**parse_env_options(lake, {"render_mode": "ansi"}))
    assert env.render_mode == "ansi"
