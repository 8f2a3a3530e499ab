"""``fairjudge judge``: run a judge with a debiasing strategy over a table of pairs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from fairjudge._cli._common import echo_json

DEFAULT_CACHE = "fairjudge-cache.sqlite"


def _temperature(value: str) -> float | None:
    if value.lower() in ("none", "default"):
        return None
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(f"expected a number or 'none'; got {value!r}",
                                 param_hint="--temperature") from None


def _check_output(path: str) -> None:
    """Fail before any call is paid for if an output file cannot be written."""
    target = Path(path)
    if target.suffix.lower() not in (".jsonl", ".ndjson", ".csv", ".parquet", ".pq"):
        raise click.BadParameter(f"{path}: unknown table format {target.suffix!r}; use .jsonl, "
                                 ".csv or .parquet", param_hint="--out")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"{path}: folder {parent} does not exist", param_hint="--out")


def build_backends(backend, model, base_url, api_key_env, timeout, concurrency, replay,
                   replay_judge, items, sim_bias, sim_position, seed):
    """Backends from the repeated --backend/--model/--base-url options (zipped by position)."""
    from fairjudge.judges import get_backend

    if not backend:
        raise click.UsageError("give at least one --backend")
    for option, values in (("--model", model), ("--base-url", base_url),
                           ("--api-key-env", api_key_env)):
        if len(values) > len(backend):
            raise click.UsageError(f"{option} is given {len(values)} times for {len(backend)} "
                                   "--backend; they pair up by position")
    # Settings pair with backends by position and are never copied to another backend, so
    # one provider's key or URL cannot reach another provider's host.
    models = list(model) + [None] * (len(backend) - len(model))
    urls = list(base_url) + [None] * (len(backend) - len(base_url))
    keys = list(api_key_env) + [None] * (len(backend) - len(api_key_env))
    out = []
    for name, mdl, url, key_env in zip(backend, models, urls, keys):
        if name in ("openai", "anthropic"):
            if not mdl:
                raise click.UsageError(f"--backend {name} needs --model")
            kwargs = {"model": mdl, "timeout": timeout, "max_connections": concurrency}
            if url:
                kwargs["base_url"] = url
            if key_env:
                kwargs["api_key_env"] = key_env
            out.append(get_backend(name, **kwargs))
        elif name == "hf":
            if not mdl:
                raise click.UsageError("--backend hf needs --model (a local model path or name)")
            out.append(get_backend("hf", model=mdl))
        elif name == "replay":
            if not replay:
                raise click.UsageError("--backend replay needs --replay VERDICTS")
            out.append(get_backend("replay", verdicts=replay, judge=replay_judge))
        elif name == "simulated":
            out.append(get_backend("simulated", items=items, bias=sim_bias,
                                   position=sim_position, seed=seed,
                                   model=mdl or "biased-judge"))
        else:
            out.append(get_backend(name, model=mdl))
    return out


@click.command()
@click.argument("pairs", type=click.Path(dir_okay=False))
@click.option("--backend", multiple=True, required=True,
              help="openai, anthropic, hf, replay or simulated (repeat for S3).")
@click.option("--model", multiple=True, help="Model id for each --backend, in order.")
@click.option("--base-url", multiple=True, help="API root for each --backend (e.g. a vLLM "
              "server's http://host:8000/v1).")
@click.option("--api-key-env", multiple=True,
              help="Environment variable holding the API key, per --backend in order.")
@click.option("--strategy", default="B0", show_default=True,
              help="B0, S1 ... S8, or CWO (consistent wins only).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Per-call verdict table (.jsonl, .csv or .parquet).")
@click.option("--aggregate", "aggregate_path", type=click.Path(dir_okay=False), default=None,
              help="Per-pair table in the input's a/b frame (default for multi-call "
                   "strategies: <out>.aggregate<suffix>).")
@click.option("--questions", type=click.Path(dir_okay=False), default=None,
              help="Table of question_id, question (when PAIRS give question_id).")
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="Item table with text (when PAIRS give item ids as a and b).")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Requests-per-minute limit.")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Tokens-per-minute limit.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, help="Per-request timeout in seconds.")
@click.option("--max-retries", type=click.IntRange(min=0), default=8, show_default=True)
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Hard spend cap in dollars.")
@click.option("--prices", type=click.Path(dir_okay=False), default=None,
              help='JSON {"model": {"input": $/Mtok, "output": $/Mtok}}.')
@click.option("--cache", "cache_path", default=None, envvar="FAIRJUDGE_CACHE",
              help=f"SQLite verdict cache [default: {DEFAULT_CACHE}]")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Fixes presentation orders (a hash of pair, strategy and seed).")
@click.option("--temperature", default="0", show_default=True,
              help="Sampling temperature, or 'none' to leave the provider default.")
@click.option("--max-tokens", type=int, default=None)
@click.option("--max-completion-tokens", type=int, default=None,
              help="Budget including hidden reasoning tokens (reasoning models).")
@click.option("--json-mode", is_flag=True, help="Ask for a JSON object response.")
@click.option("--logprobs", type=int, default=0, help="Top log-probabilities to request.")
@click.option("--reasoning-effort", default=None)
@click.option("--template", default=None, help="Use this prompt template instead.")
@click.option("--templates", type=click.Path(dir_okay=False), default=None,
              help="JSON file overriding prompt templates.")
@click.option("--replay", type=click.Path(dir_okay=False), default=None,
              help="Recorded verdicts served by --backend replay.")
@click.option("--replay-judge", default=None, help="Which recorded judge to replay.")
@click.option("--sim-bias", type=float, default=2.0, show_default=True,
              help="Simulated judge: logits per 100 words (or per unit of `verbose`).")
@click.option("--sim-position", type=float, default=0.5, show_default=True,
              help="Simulated judge: first-slot logits.")
@click.option("--no-progress", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
def judge(pairs, backend, model, base_url, api_key_env, strategy, out, aggregate_path,
          questions, items, concurrency, rpm, tpm, timeout, max_retries, max_cost, prices,
          cache_path, seed, temperature, max_tokens, max_completion_tokens, json_mode, logprobs,
          reasoning_effort, template, templates, replay, replay_judge, sim_bias, sim_position,
          no_progress, as_json):
    """Judge every pair in PAIRS (JSONL: id, question, a, b[, reference]) with a strategy."""
    from fairjudge.data import load_pairs, write_table
    from fairjudge.judges import (
        CompletionCache,
        GenerationSettings,
        PriceTable,
        RunOptions,
        RunReport,
        load_templates,
    )
    from fairjudge.strategies import get_strategy, judge_pairs

    chosen = get_strategy(strategy)
    for path in filter(None, (out, aggregate_path)):
        _check_output(path)
    table = load_pairs(pairs, questions=questions, items=items)
    if "hf" in backend and template is None:
        # Next-token logits judge a bare label; JSON or reasoning prompts would read the
        # logits where the model writes "{" or its first word.
        template = "letter"
        click.echo("note: the hf backend scores the A/B next-token logits; using the "
                   "`letter` template (pass --template to override)", err=True)
    loaded_templates = load_templates(templates)
    if template and template not in loaded_templates:
        raise click.BadParameter(f"unknown template {template!r}; have "
                                 f"{', '.join(loaded_templates)}", param_hint="--template")
    settings = GenerationSettings(temperature=_temperature(temperature), max_tokens=max_tokens,
                                  max_completion_tokens=max_completion_tokens,
                                  json_response=json_mode, logprobs=logprobs,
                                  reasoning_effort=reasoning_effort)
    options = RunOptions(concurrency=concurrency, requests_per_minute=rpm,
                         tokens_per_minute=tpm, max_retries=max_retries, max_cost=max_cost,
                         prices=PriceTable.from_file(prices) if prices else None,
                         progress=not no_progress, seed=seed)
    backends = build_backends(backend, model, base_url, api_key_env, timeout, concurrency,
                              replay, replay_judge, items, sim_bias, sim_position, seed)
    report = RunReport()
    cache = CompletionCache(cache_path or DEFAULT_CACHE)
    try:
        result = judge_pairs(table, chosen, backends, cache=cache, options=options, seed=seed,
                             settings=settings, templates=loaded_templates, template=template,
                             report=report)
    except KeyboardInterrupt:
        report.interrupted = True
        click.echo(f"interrupted: {report.summary()}", err=True)
        raise SystemExit(130) from None
    finally:
        cache.close()
    write_table(result.calls, out)
    written = [out]
    multi = chosen.cost_multiplier(len(backends)) > 1 or chosen.needs_reference
    if aggregate_path is None and multi:
        path = Path(out)
        aggregate_path = str(path.with_name(f"{path.stem}.aggregate{path.suffix}"))
    if aggregate_path:
        write_table(result.aggregate, aggregate_path)
        written.append(aggregate_path)
    if result.references is not None and len(result.references):
        path = Path(out)
        references_path = str(path.with_name(f"{path.stem}.references{path.suffix}"))
        write_table(result.references, references_path)
        written.append(references_path)
    details = result.aggregate["outcome_detail"].value_counts().to_dict()
    if as_json:
        echo_json({"strategy": chosen.name, "pairs": len(table),
                   "completed_pairs": len(result.aggregate),
                   "incomplete_pairs": len(result.incomplete), "outcomes": details,
                   "report": report.as_dict(), "written": [os.path.abspath(p) for p in written]})
    else:
        click.echo(f"{chosen.name} ({chosen.title}): {len(result.aggregate)}/{len(table)} pairs "
                   f"judged; outcomes {details}", err=True)
        click.echo(report.summary(), err=True)
        click.echo(f"wrote {', '.join(written)}", err=True)
    if report.stopped_by_cap:
        click.echo(f"error: the spend cap ${max_cost} was reached; {len(result.incomplete)} "
                   "pairs are incomplete (raise --max-cost and rerun to resume from the cache)",
                   err=True)
        raise SystemExit(3)
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)
    if len(report.errors) > 5:
        click.echo(f"... and {len(report.errors) - 5} more errors", err=True)
    if result.incomplete:
        click.echo(f"warning: {len(result.incomplete)} pairs incomplete (failed calls above); "
                   "rerun to retry them", err=True)
