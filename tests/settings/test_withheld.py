"""The shared cache's token and signing key reach no check and are masked."""

from __future__ import annotations

from eval_banana.models.config import ExecutionSettings
from eval_banana.runners.redact import redactor_for
from eval_banana.settings.envpolicy import build_base_env

ENV = {
    "PATH": "/bin",
    "EVAL_BANANA_CACHE_TOKEN": "a-bearer-token-1234",
    "EVAL_BANANA_CACHE_SIGNING_KEY": "a-signing-key-5678",
    "EVAL_BANANA_CACHE_MODE": "on",
}


def test_no_policy_passes_them_to_checks() -> None:
    for policy in ("inherit", "allowlist"):
        settings = ExecutionSettings(
            env=policy,
            env_allow=["EVAL_BANANA_CACHE_TOKEN"],
            env_allow_prefixes=["EVAL_BANANA_"],
        )
        env = build_base_env(settings=settings, environ=ENV)
        assert "EVAL_BANANA_CACHE_TOKEN" not in env
        assert "EVAL_BANANA_CACHE_SIGNING_KEY" not in env
        assert env["PATH"] == "/bin"


def test_they_are_masked_though_eb_s_other_settings_are_not() -> None:
    redactor = redactor_for(environ=ENV, names=())
    assert redactor.text("a-bearer-token-1234 a-signing-key-5678") == "*** ***"
    assert set(redactor.secrets) == {"a-bearer-token-1234", "a-signing-key-5678"}


def test_the_remote_url_reaches_no_check_and_only_its_secrets_are_masked() -> None:
    """The shared cache's URL may hold a password: it is withheld like the token, but only its
    password (as written and decoded) and query are masked, so messages still name the host."""
    from eval_banana.settings.envpolicy import WITHHELD_NAMES
    from eval_banana.settings.table import variable_of

    assert variable_of("cache.remote") in WITHHELD_NAMES
    url = "https://ci:pa%21ss-word@cache.example/eb?sig=abc123def"
    environ = {**ENV, "EVAL_BANANA_CACHE_REMOTE": url}
    for policy in ("inherit", "allowlist"):
        settings = ExecutionSettings(env=policy, env_allow_prefixes=["EVAL_BANANA_"])
        env = build_base_env(settings=settings, environ=environ)
        assert "EVAL_BANANA_CACHE_REMOTE" not in env and env["EVAL_BANANA_CACHE_MODE"] == "on"
    redactor = redactor_for(environ=environ, names=(), remotes=(url, None))
    assert redactor.text(f"{url} pa!ss-word") == "https://ci:***@cache.example/eb?*** ***"
    assert redactor_for(environ={}, names=(), remotes=("s3://bucket/eb",)).secrets == ()


def test_every_redactor_masks_the_remote_url_its_environment_gives() -> None:
    """The run's redactor, a judge's transcript and a calibration run all build theirs from an
    environment: the URL's secrets come from it without each caller passing the URL again."""
    url = "https://ci:pa%21ss-word@cache.example/eb"
    redactor = redactor_for(environ={"EVAL_BANANA_CACHE_REMOTE": url}, names=())
    assert redactor.text("pa!ss-word pa%21ss-word") == "*** ***"
