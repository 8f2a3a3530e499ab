"""``fairjudge discover``: find a judge's biases where it disagrees with the humans."""

from __future__ import annotations

import click

from fairjudge._cli._common import (
    check_outputs,
    echo_json,
    input_options,
    read_question_table,
    report_provenance,
)
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    generator_options,
    json_option,
    run_options,
    run_with_generator,
    seed_option,
)


@click.command()
@click.argument("verdicts", type=click.Path(dir_okay=False))
@click.option("--gold", required=True, type=click.Path(dir_okay=False),
              help="Human (or objective) labels: item_a, item_b, winner per pair "
                   "(annotator_agreement optional).")
@click.option("--items", required=True, type=click.Path(dir_okay=False),
              help="Item table with the responses' `text` (and `question`, or give "
                   "--questions).")
@click.option("--questions", type=click.Path(dir_okay=False), default=None,
              help="Question table: question_id, question (when the items lack `question`).")
@click.option("--offline", is_flag=True,
              help="Discover without a generator LLM (sentence clusters named by TF-IDF).")
@generator_options("--generator", "--backend", required=False)
@click.option("--judge", default=None,
              help="Use this judge's disagreement cases (default: the cases every judge "
                   "decides alike against the humans, the paper's consensus set).")
@click.option("--embedder", default=None,
              help="hashing (built in), minilm (offline all-MiniLM-L6-v2, `embeddings` "
                   "extra) or a local sentence-transformers model [default: hashing offline, "
                   "minilm with a generator].")
@click.option("--clusters", type=click.IntRange(min=2), default=20, show_default=True,
              help="k-means clusters (M: of sentences offline, of features per iteration).")
@click.option("--top-k", type=click.IntRange(min=1), default=5, show_default=True,
              help="Factors kept (K).")
@click.option("--proposals", type=click.IntRange(min=1), default=None,
              help="Factors G_construct proposes per iteration [default: 2K].")
@click.option("--similarity-threshold", type=click.FloatRange(0, 1, min_open=True),
              default=0.7, show_default=True,
              help="tau: a proposed factor this similar to a pooled one is dropped.")
@click.option("--coverage", type=click.FloatRange(0, 1, min_open=True), default=0.8,
              show_default=True, help="rho: stop once the factors cover this share of "
                                      "features.")
@click.option("--iterations", type=click.IntRange(min=1), default=3, show_default=True,
              help="T: iterations at most.")
@click.option("--no-reference", is_flag=True,
              help="Skip scoring the pre-discovered factors of Table 5 (no novelty analysis).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the factors (definitions, criteria, mean delta, p) as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write an HTML report (factor table, novelty heatmap, pipeline).")
@click.option("--score-items", type=click.Path(dir_okay=False), default=None,
              help="With a generator: write the item table with each significant factor's "
                   "G_score (1-5) per answer as a column factor_<name>, covariates for "
                   "`fairjudge rank --items`.")
@click.option("--factor-p", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Factors scored by --score-items: Holm-adjusted held-out p at most this.")
@run_options()
@seed_option
@json_option
def discover(verdicts, gold, items, questions, offline, judge, embedder, clusters, top_k,
             proposals, similarity_threshold, coverage, iterations, no_reference, out,
             html_path, score_items, factor_p, **params):
    """Find candidate bias factors in VERDICTS: what the responses judges prefer against
    the humans have, validated on held-out cases [hubj-bias-discovery §3.2, Algorithm 1].
    With --generator (or --backend) an LLM extracts features, proposes and assigns factors
    and scores responses; with --offline sentence clusters stand for them."""
    import json

    from fairjudge._util._files import atomic_write
    from fairjudge.audit import load_gold
    from fairjudge.data import load_items, load_verdicts
    from fairjudge.discovery import disagreement_cases, human_agreement

    if offline == bool(params.get("generator")):
        raise click.UsageError("give either --offline or --generator (alias --backend) SPEC")
    if offline and score_items:
        raise click.UsageError("--score-items scores answers with G_score, a generator call: "
                               "offline factors score themselves (`rank --factors`)")
    check_outputs({"--score-items": score_items},
                  {"VERDICTS": verdicts, "--gold": gold, "--items": items,
                   "--questions": questions, **input_options(params)})
    check_outputs({"--out": out, "--html": html_path},
                  {"VERDICTS": verdicts, "--gold": gold, "--items": items,
                   "--questions": questions, **input_options(params)}, tables=False)
    table, labels, item_table = load_verdicts(verdicts), load_gold(gold), load_items(items)
    if "text" not in item_table.columns:
        raise click.BadParameter("the item table needs a `text` column", param_hint="--items")
    sets = human_agreement(table, labels)
    chosen = (sets.disagreement(judge) if judge is not None
              else sets.consensus_disagreement())
    if not len(chosen):
        from fairjudge.discovery import explain_empty

        raise click.UsageError(explain_empty(sets, judge, "disagreement"))
    which = f"judge {judge}" if judge is not None else \
        f"consensus: all {len(sets.judges)} judges alike"
    if judge is None and len(sets.judges) == 1:
        which = f"judge {sets.judges[0]}, the only one (a consensus needs two or more)"
    counts = sets.counts()
    click.echo(f"{len(chosen)} disagreement cases ({which}); set aside per judge: " + ", ".join(
        f"{j} {int(row.drop(['agree', 'disagree'], errors='ignore').sum())}"
        for j, row in counts.iterrows() if judge is None or j == judge), err=True)
    if judge is None and len(sets.judges) > 1 and len(chosen) < 25:
        click.echo("few consensus cases; one judge's own (--judge NAME) has more: " + ", ".join(
            f"{j} {int(row.get('disagree', 0))}" for j, row in counts.iterrows()), err=True)
    question_table = None
    if offline:
        result = _offline(chosen, item_table, clusters, top_k, embedder or "hashing",
                          params["seed"])
    else:
        question_table = read_question_table(questions)
        cases = disagreement_cases(chosen, item_table, question_table)
        result = _with_generator(cases, params, embedder or "minilm", clusters, top_k,
                                 proposals, similarity_threshold, coverage, iterations,
                                 no_reference)
        if result is None:
            return ExitCode.SPEND_CAP
    if out:
        with atomic_write(out) as handle:
            json.dump(result.to_dict(), handle, indent=1, default=str)
    if html_path:
        from fairjudge.report import discovery_html

        html = discovery_html(result, provenance=report_provenance(
            verdicts, gold, items, questions, seed=params["seed"]))
        with atomic_write(html_path) as handle:
            handle.write(html)
    scored = None
    if score_items:
        scored = _score_items(result, item_table, question_table, factor_p, score_items,
                              params)
        if scored is None:
            return ExitCode.SPEND_CAP
    if params["as_json"]:
        echo_json(result.to_dict())
        return
    _print(result)
    if scored:
        click.echo(f"wrote {score_items}: rank with --items {score_items} --covariates "
                   f"length,markdown,{','.join(scored)}")
    for path in (out, html_path):
        if path:
            click.echo(f"wrote {path}")


def _score_items(result, item_table, question_table, factor_p, path, params):
    """Score every item by the factors significant at ``factor_p`` and write the table;
    the new columns, or None when the spend cap stopped the scoring."""
    from fairjudge.data import write_table
    from fairjudge.discovery import factor_column, score_items

    kept = [f for f in result.factors if f.p_adjusted <= factor_p]
    if not kept:
        click.echo(f"no factor has a held-out Holm p of {factor_p} or less: nothing to score "
                   "(--factor-p)", err=True)
        return []
    table = item_table.copy()
    if "question" not in table.columns and question_table is not None \
            and "question_id" in table.columns:
        table["question"] = question_table["question"].reindex(
            table["question_id"].astype(str)).to_numpy()
    scores = run_with_generator(params, lambda generator, modules: score_items(
        [f.factor for f in kept], table, generator, criteria=[f.criteria for f in kept],
        **modules))
    if scores is None:
        return None
    out = item_table.copy()
    for column in scores.columns:
        out[column] = scores[column].to_numpy()
    write_table(out.rename_axis("id").reset_index(), path)
    return [factor_column(f.name) for f in kept]


def _offline(chosen, item_table, clusters, top_k, embedder, seed):
    from fairjudge.discovery import discover_offline

    text = item_table["text"].astype(str)
    preferred = [r.item_a if r.judge_pick == "a" else r.item_b for r in chosen.itertuples()]
    human = [r.item_a if r.human == "a" else r.item_b for r in chosen.itertuples()]
    missing = [i for i in preferred + human if i not in text.index]
    if missing:
        raise click.BadParameter(f"item {missing[0]!r} has no text", param_hint="--items")
    # Cases of one question go to the same side of the calibration/test split.
    groups = (item_table["question_id"].reindex(preferred).astype(str).tolist()
              if "question_id" in item_table.columns else None)
    return discover_offline(text.loc[preferred].tolist(), text.loc[human].tolist(),
                            n_clusters=clusters, top_k=top_k, embedder=embedder,
                            groups=groups, rng=seed)


def _with_generator(cases, params, embedder, clusters, top_k, proposals, threshold,
                    coverage, iterations, no_reference):
    """Algorithm 1 with the generator LLM; None when the spend cap stopped it."""
    from fairjudge.discovery import PRE_DISCOVERED, identify

    return run_with_generator(params, lambda generator, modules: identify(
        cases, generator, embedder=embedder, top_k=top_k, proposals=proposals,
        clusters=clusters, similarity_threshold=threshold, coverage=coverage,
        iterations=iterations, reference_factors=() if no_reference else PRE_DISCOVERED,
        rng=params["seed"], **modules))


def _print(result) -> None:
    from fairjudge.discovery import Identification
    from fairjudge.report import format_p

    if isinstance(result, Identification):
        click.echo(f"{len(result.factors)} factors from the features of "
                   f"{result.n_calibration} cases ({len(result.features)} features, "
                   f"{result.history['iteration'].max()} iterations, final coverage "
                   f"{result.history['coverage'].iloc[-1]:.0%}), validated on {result.n_test} "
                   "held-out cases; mean delta = G_score(judge-preferred) - "
                   "G_score(human-preferred) on 1-5, one-sided p Holm-adjusted")
        rows = [("", f) for f in result.factors] + [("reference ", f) for f in result.baselines]
        for tag, f in rows:
            e = f.mean_delta
            click.echo(f"  {tag + f.name:<40} mean delta {e.estimate:+.3f} [{e.ci_low:+.3f}, "
                       f"{e.ci_high:+.3f}]  p {format_p(f.p_adjusted)}  n {e.n}")
        failed = {k: v for k, v in result.failures.items() if v}
        if failed:
            click.echo("calls without a usable reply after re-asks (left out): " + ", ".join(
                f"{k} {v}" for k, v in failed.items()))
        if result.novelty is not None:
            click.echo("novelty (Pearson r of delta with the pre-discovered factors):")
            click.echo(result.novelty.round(2).to_string())
    else:
        click.echo(f"{len(result.factors)} candidate factors from {result.n_calibration} "
                   f"cases, validated on {result.n_test} held-out cases ({result.embedder} "
                   "embeddings); mean delta = score(judge-preferred) - score(human-preferred); "
                   "one-sided p, Holm-adjusted over the factors")
        for f in result.factors:
            e = f.mean_delta
            click.echo(f"  {f.name:<40} mean delta {e.estimate:+.3f} [{e.ci_low:+.3f}, "
                       f"{e.ci_high:+.3f}]  p {format_p(f.p_adjusted)}  e.g. "
                       f"{f.examples[0][:60]!r}")
    if not any(f.p_adjusted < 0.05 for f in result.factors):
        click.echo("no factor is significant at 0.05 on the held-out cases")

