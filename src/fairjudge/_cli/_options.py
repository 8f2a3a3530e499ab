"""Options shared by several commands, each declared once (with its ``FAIRJUDGE_*``
environment variable), and their translation into library objects.

Heavy modules are imported only inside the functions that build objects, so that
``fairjudge --help`` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

CACHE_ENV = "FAIRJUDGE_CACHE"


def default_cache_path() -> Path:
    """The user's cache file: ``$FAIRJUDGE_CACHE``, else ``<user cache dir>/completions.sqlite``
    (``~/.cache/fairjudge`` on Linux), so runs from any folder share one cache."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("fairjudge")) / "completions.sqlite"


class LazyChoice(click.Choice):
    """A choice whose values come from a registry, looked up only when needed (parsing or a
    command's own ``--help``), so that listing commands imports nothing heavy."""

    def __init__(self, loader):
        self._loader = loader
        self._loaded = None
        self.case_sensitive = True

    @property
    def choices(self):
        if self._loaded is None:
            self._loaded = tuple(self._loader())
        return self._loaded

    @choices.setter
    def choices(self, value):
        self._loaded = tuple(value)


def model_choice() -> LazyChoice:
    """The registered ranking models (``fairjudge.models.model_names``)."""
    def load():
        from fairjudge.models import model_names
        return model_names()
    return LazyChoice(load)


def rule_choice() -> LazyChoice:
    """The acquisition rules (``fairjudge.active.RULES``)."""
    def load():
        from fairjudge.active import RULES
        return RULES
    return LazyChoice(load)


def _stack(*decorators):
    def apply(func):
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply


def _temperature(ctx, param, value):
    if value is None or str(value).lower() in ("none", "default"):
        return None
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(f"expected a number or 'none'; got {value!r}") from None


seed_option = click.option("--seed", type=int, default=0, show_default=True,
                           envvar="FAIRJUDGE_SEED",
                           help="Seeds every random choice (orders, sampling, bootstraps).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
cache_option = click.option(
    "--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
    help=f"SQLite completion cache [env {CACHE_ENV}; default: the user cache folder, "
         "~/.cache/fairjudge/completions.sqlite on Linux].")
items_option = click.option("--items", type=click.Path(dir_okay=False), default=None,
                            help="Item table: id, text, covariates, source, optional quality.")
gold_option = click.option("--gold", type=click.Path(dir_okay=False), default=None,
                           help="Gold labels: item_a, item_b, winner (a, b, tie) per pair.")


family_option = click.option(
    "--family", multiple=True,
    help="FAMILY=NAME[,NAME...]: names (judges, answer sources) of a model family, for "
         "self-preference; extends the built-in table (repeatable).")


def judge_options(*, model_alias: bool = True):
    """The judge backends and how to call them (shared by judge, audit and select).

    ``--backend`` may repeat (cross-family ensembles); ``--judge-model``, ``--base-url`` and
    ``--api-key-env`` pair with the backends by position. Where a command has no ranking
    model, ``--model`` is accepted as an alias of ``--judge-model``.
    """
    model_names = ("--judge-model", "--model") if model_alias else ("--judge-model",)
    return _stack(
        click.option("--backend", multiple=True, envvar="FAIRJUDGE_BACKEND",
                     help="A registered judge backend: openai, anthropic, hf, replay, "
                          "simulated, ... (repeat for S3) [env FAIRJUDGE_BACKEND]."),
        click.option(*model_names, "judge_model", multiple=True, envvar="FAIRJUDGE_JUDGE_MODEL",
                     help="Judge model id for each --backend, in order "
                          "[env FAIRJUDGE_JUDGE_MODEL]."),
        click.option("--base-url", multiple=True, envvar="FAIRJUDGE_BASE_URL",
                     help="API root for each --backend (e.g. a vLLM server's "
                          "http://host:8000/v1) [env FAIRJUDGE_BASE_URL]."),
        click.option("--api-key-env", multiple=True,
                     help="Name of the environment variable holding each --backend's API "
                          "key (the key itself is never printed or cached)."),
        click.option("--cache-ignore-port", is_flag=True,
                     help="Leave the port out of the endpoint in cache keys (a local server "
                          "that restarts on another port serves the same model)."),
        click.option("--replay", type=click.Path(dir_okay=False), default=None,
                     help="Recorded verdicts served by --backend replay."),
        click.option("--replay-judge", default=None, help="Which recorded judge to replay."),
        click.option("--sim-bias", type=float, default=2.0, show_default=True,
                     help="Simulated judge: logits per 100 words (or per unit of `verbose`)."),
        click.option("--sim-position", type=float, default=0.5, show_default=True,
                     help="Simulated judge: first-slot logits."),
    )


def generator_options(*names: str, required: bool = True):
    """The generator LLM of HUB-J's modules (criteria, rewrites, features, scores): its
    backend spec under ``names`` (default ``--generator``), API root, key variable and
    completion budget."""
    names = names or ("--generator",)
    return _stack(
        click.option(*names, "generator", required=required, default=None,
                     help="The LLM behind the modules, as backend:model (e.g. "
                          "openai:gpt-4o-mini, or a local server with "
                          "--generator-base-url); not simulated, which only judges."),
        click.option("--generator-base-url", default=None, help="API root of the generator."),
        click.option("--generator-api-key-env", default=None,
                     help="Name of the environment variable holding the generator's key."),
        click.option("--max-tokens", type=click.IntRange(min=1), default=2048,
                     show_default=True, help="Completion budget of each generator call."),
        click.option("--templates", type=click.Path(dir_okay=False), default=None,
                     help="JSON file overriding module prompts by name (hubj-extract, "
                          "hubj-construct, hubj-assign, hubj-criteria, hubj-inject, "
                          "hubj-score, hubj-verify, hubj-paraphrase)."),
    )


def build_generator(params: dict):
    """The generator backend, its settings and the module templates from
    :func:`generator_options`."""
    import inspect

    from fairjudge.discovery import load_module_templates
    from fairjudge.judges import GenerationSettings, backend_from_spec
    from fairjudge.judges._base import backend_class

    spec = params["generator"]
    if spec.split(":", 1)[0] in ("simulated", "replay"):
        raise click.BadParameter(
            f"the {spec.split(':', 1)[0]} backend only gives pairwise verdicts; the modules "
            "need an LLM that writes JSON and text (an OpenAI-compatible server such as "
            "vLLM or Ollama via openai:MODEL --generator-base-url URL, anthropic:MODEL, or "
            "hf:PATH)", param_hint="--generator")
    try:
        accepted = inspect.signature(backend_class(spec.split(":", 1)[0])).parameters
    except Exception:  # noqa: BLE001 -- backend_from_spec names an unknown backend below
        accepted = {}
    offered = {"base_url": params.get("generator_base_url"),
               "api_key_env": params.get("generator_api_key_env"),
               "timeout": params.get("timeout"), "max_connections": params.get("concurrency"),
               "key_port": not params.get("cache_ignore_port", False)}
    settings = {k: v for k, v in offered.items()
                if v is not None and (k in accepted or k in ("base_url", "api_key_env"))}
    return (backend_from_spec(spec, **settings),
            GenerationSettings(temperature=0.0, max_tokens=params["max_tokens"]),
            load_module_templates(params.get("templates")))


def run_with_generator(params: dict, work):
    """Call ``work(generator, modules)`` with the generator of :func:`generator_options`
    and ``modules``, the keyword arguments every HUB-J module workflow takes (cache, run
    options, report, templates, generator settings). Returns its result, or None when the
    spend cap stopped it (the message is printed; every paid call stays cached). The run's
    summary goes to stderr, whatever happened."""
    from fairjudge.discovery._modules import SpendCapStop
    from fairjudge.judges import RunReport

    generator, settings, templates = build_generator(params)
    cache, cache_path = open_cache(params)
    report = RunReport()
    modules = {"cache": cache, "options": build_run_options(params, progress_default=False),
               "report": report, "templates": templates, "generator_settings": settings}
    try:
        return work(generator, modules)
    except SpendCapStop as stop:
        click.echo(f"error: {stop}", err=True)
        return None
    finally:
        cache.close()
        # Also after an error: what was paid for, and where it is cached.
        click.echo(report.summary() + f"; cache: {cache_path}", err=True)


def run_options():
    """How calls are made: concurrency, limits, retries, the spend cap, the cache."""
    return _stack(
        click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
                     envvar="FAIRJUDGE_CONCURRENCY", help="Calls in flight at once."),
        click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Requests-per-minute limit."),
        click.option("--tpm", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Tokens-per-minute limit: each call reserves its prompt estimate "
                          "plus --max-tokens, corrected by the usage the provider reports."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                     show_default=True, envvar="FAIRJUDGE_TIMEOUT",
                     help="Per-request timeout in seconds."),
        click.option("--max-retries", type=click.IntRange(min=0), default=8, show_default=True,
                     help="Retries per call on 429, 5xx, timeouts and dropped connections."),
        click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None,
                     envvar="FAIRJUDGE_MAX_COST",
                     help="Hard spend cap in dollars (needs a price for the model and "
                          "--max-tokens) [env FAIRJUDGE_MAX_COST]."),
        click.option("--prices", type=click.Path(dir_okay=False), default=None,
                     envvar="FAIRJUDGE_PRICES",
                     help='Price file, JSON {"model": {"input": $/Mtok, "output": $/Mtok}}, '
                          "overriding the built-in list prices (common OpenAI, Anthropic and "
                          "Google models, dated) [env FAIRJUDGE_PRICES]."),
        cache_option,
        click.option("--no-progress", is_flag=True, help="No progress bar."),
    )


def batch_options():
    """Sending calls through a provider's batch API (or as vllm run-batch files)."""
    return _stack(
        click.option("--batch", "batch", is_flag=True,
                     help="Send the calls through the provider's batch API (OpenAI Batch, "
                          "Anthropic Message Batches: half the price, answers within 24 h): "
                          "submit, poll and collect into the cache. Interrupted, the same "
                          "command resumes the same batches without submitting again."),
        click.option("--batch-dir", type=click.Path(file_okay=False), default=None,
                     help="Write the calls as vllm run-batch input files in this folder "
                          "(openai backend) and print the command to run; rerun to collect "
                          "the output files."),
        click.option("--batch-poll", type=click.FloatRange(min=0, min_open=True),
                     default=30.0, show_default=True,
                     help="Seconds between two status checks of a running batch."),
        click.option("--batch-no-wait", is_flag=True,
                     help="Submit and return without waiting; rerun to collect."),
    )


#: The debiasing-strategies study runs every single-call strategy at temperature 0.1 (its
#: §3: "avoiding the degenerate outputs occasionally observed at temperature 0"); commands
#: that run a strategy default to it. Ranking commands default to 0 (the top-k paper's
#: oracles are collected at temperature 0).
STUDY_TEMPERATURE = "0.1"


def generation_options(temperature: str = "0"):
    """What the judge is asked, and how it generates; ``temperature`` is the default."""
    origin = (" (the debiasing-strategies study's setting; 0 for greedy decoding)"
              if temperature == STUDY_TEMPERATURE else "")
    return _stack(
        click.option("--temperature", default=temperature, show_default=True,
                     callback=_temperature,
                     help="Sampling temperature, or 'none' to leave the provider default"
                          f"{origin}."),
        click.option("--max-tokens", type=click.IntRange(min=1), default=None,
                     help="Completion budget per call (needed for a spend cap)."),
        click.option("--max-completion-tokens", type=click.IntRange(min=1), default=None,
                     help="Budget including hidden reasoning tokens (reasoning models)."),
        click.option("--json-mode", is_flag=True, help="Ask for a JSON object response."),
        click.option("--logprobs", type=click.IntRange(min=0), default=0,
                     help="Top log-probabilities to request."),
        click.option("--reasoning-effort", default=None,
                     help="Passed to providers that support it."),
        click.option("--template", default=None, help="Use this prompt template instead."),
        click.option("--templates", type=click.Path(dir_okay=False), default=None,
                     help="JSON file overriding prompt templates."),
    )


# -- building library objects from the options --------------------------------------------

def backend_from_environment_only() -> bool:
    """Whether ``--backend`` came from ``FAIRJUDGE_BACKEND`` rather than the command line: a
    recorded input given explicitly (VERDICTS, ``--oracle``) then takes precedence over it."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    return ctx.get_parameter_source("backend") == click.core.ParameterSource.ENVIRONMENT


def build_backends(params: dict, *, items=None, seed: int = 0):
    """Backends from the repeated ``--backend``/``--judge-model``/``--base-url``/
    ``--api-key-env`` options (paired by position; a setting never reaches another backend,
    so one provider's key or URL cannot leak to another provider's host).

    Every backend gets the settings its constructor accepts (any registered backend works);
    a setting given for a backend that does not take it is a usage error.
    """
    import inspect

    from fairjudge.judges._base import backend_class

    backend = params.get("backend") or ()
    if not backend:
        raise click.UsageError("give at least one --backend")
    models, urls, keys = (list(params.get(n) or ()) for n in
                          ("judge_model", "base_url", "api_key_env"))
    for option, values in (("--judge-model", models), ("--base-url", urls),
                           ("--api-key-env", keys)):
        if len(values) > len(backend):
            raise click.UsageError(f"{option} is given {len(values)} times for "
                                   f"{len(backend)} --backend; they pair up by position")
    models += [None] * (len(backend) - len(models))
    urls += [None] * (len(backend) - len(urls))
    keys += [None] * (len(backend) - len(keys))
    out = []
    for name, model, url, key_env in zip(backend, models, urls, keys):
        accepted = inspect.signature(backend_class(name)).parameters
        explicit = {"model": ("--judge-model", model), "base_url": ("--base-url", url),
                    "api_key_env": ("--api-key-env", key_env)}
        for setting, (option, value) in explicit.items():
            if value and setting not in accepted:
                raise click.UsageError(f"{option} does not apply to --backend {name}")
        required = accepted.get("model")
        if required is not None and required.default is inspect.Parameter.empty and not model:
            raise click.UsageError(f"--backend {name} needs --judge-model")
        if name == "replay" and not params.get("replay"):
            raise click.UsageError("--backend replay needs --replay VERDICTS")
        offered = {"model": model, "base_url": url, "api_key_env": key_env,
                   "timeout": params.get("timeout", 60.0),
                   "max_connections": params.get("concurrency", 16),
                   "key_port": not params.get("cache_ignore_port", False),
                   "verdicts": params.get("replay"), "judge": params.get("replay_judge"),
                   "labels": params.get("human_labels"),
                   "items": items, "bias": params.get("sim_bias", 2.0),
                   "position": params.get("sim_position", 0.5), "seed": seed}
        kwargs = {k: v for k, v in offered.items() if k in accepted and v is not None}
        out.append(backend_class(name)(**kwargs))
    return out


#: Options that change how a job's calls are made or shown, not which calls they are
#: (option -> whether it takes a value): a rerun that changes them is the same job.
_NOT_THE_JOB = {"--max-cost": True, "--batch": False, "--batch-dir": True,
                "--batch-poll": True, "--batch-no-wait": False, "--no-progress": False}


def job_of_command() -> str | None:
    """The job this command line names: a hash of its arguments without ``--max-cost``,
    the batch options and ``--no-progress`` (:data:`_NOT_THE_JOB`), so that a rerun --
    with the same or a raised cap, collecting a batch without ``--batch-no-wait`` -- or
    the same command started twice shares one spend cap (see
    :class:`fairjudge.judges.RunOptions`)."""
    import hashlib
    import sys

    from fairjudge._cli._common import command_line

    argv = command_line() or sys.argv
    kept, skip = [], False
    for arg in argv[1:]:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _NOT_THE_JOB:
            skip = _NOT_THE_JOB[name] and "=" not in arg
            continue
        kept.append(arg)
    return hashlib.sha256("\x1f".join(kept).encode("utf-8")).hexdigest()[:32]


def build_run_options(params: dict, *, progress_default: bool = True):
    """:class:`fairjudge.judges.RunOptions` from the run options."""
    from fairjudge.judges import RunOptions

    return RunOptions(job=job_of_command(), concurrency=params.get("concurrency", 16),
                      requests_per_minute=params.get("rpm"),
                      tokens_per_minute=params.get("tpm"),
                      max_retries=params.get("max_retries", 8),
                      max_cost=params.get("max_cost"),
                      prices=run_prices(params.get("prices")),
                      progress=progress_default and not params.get("no_progress", False),
                      seed=params.get("seed", 0), batch=_batch(params))


def _batch(params: dict):
    """:class:`~fairjudge.judges.BatchOptions` from the batch options, or None."""
    if not params.get("batch") and not params.get("batch_dir"):
        return None
    from fairjudge.judges import BatchOptions

    return BatchOptions(poll_seconds=params.get("batch_poll", 30.0),
                        wait=False if params.get("batch_no_wait") else None,
                        directory=params.get("batch_dir"))


def run_prices(path: str | None):
    """The built-in list prices, with a user's ``--prices`` file overriding its entries."""
    from fairjudge.judges import PriceTable

    builtin = PriceTable.builtin()
    return builtin if not path else builtin.updated(PriceTable.from_file(path))


def build_settings(params: dict):
    """:class:`fairjudge.judges.GenerationSettings` from the generation options."""
    from fairjudge.judges import GenerationSettings

    return GenerationSettings(temperature=params.get("temperature", 0.0),
                              max_tokens=params.get("max_tokens"),
                              max_completion_tokens=params.get("max_completion_tokens"),
                              json_response=params.get("json_mode", False),
                              logprobs=params.get("logprobs", 0),
                              reasoning_effort=params.get("reasoning_effort"))


def open_cache(params: dict):
    """The completion cache named by ``--cache`` (or the default), with its path."""
    from fairjudge.judges import CompletionCache

    path = Path(params["cache_path"]) if params.get("cache_path") else default_cache_path()
    return CompletionCache(path), path


def parse_judge_costs(values):
    """``--judge-cost`` values: a list of costs (by position) or a dict (NAME=COST)."""
    if not values:
        return None
    named = ["=" in v for v in values]
    if any(named) and not all(named):
        raise click.UsageError("give every --judge-cost as COST (in judge order) or every one "
                               "as NAME=COST, not a mix")
    out = {}
    for position, value in enumerate(values):
        name, _, text = value.rpartition("=") if "=" in value else (position, "", value)
        try:
            cost = float(text)
        except ValueError:
            raise click.BadParameter(f"{value!r}: expected a number, or NAME=number",
                                     param_hint="--judge-cost") from None
        if not (cost > 0 and cost < float("inf")):
            raise click.BadParameter(f"{value!r}: a cost must be a positive number",
                                     param_hint="--judge-cost")
        out[name] = cost
    return out if all(named) else list(out.values())
