"""HUB-J: discovering a judge's biases from where it disagrees with humans
[hubj-bias-discovery].

So far: the data of §3.1 -- per judge, the agreement and disagreement sets against the
human majority, the consensus sets across judges, the pairs set aside and why
(:func:`human_agreement`), seeded calibration/test splits (:func:`split_sets`); and the
offline discovery mode (:func:`discover_offline`): sentence clusters that lean to
judge-preferred responses, named by class-based TF-IDF, validated by mean Δ on held-out
cases; :func:`load_factors` and :func:`with_factor_covariates` turn found factors into
per-verdict covariates, so the bias-aware ranking removes a bias fairjudge found itself.
Quantification by injection (§3.3, Algorithm 2): :func:`quantify` with the paper's
G_crit and G_inj prompts as versioned :data:`MODULE_TEMPLATES`, an answer-preservation
check and a placebo paraphrase. The bias-controlled win rate of §3.4 is
:mod:`fairjudge.winrate`.
"""

from fairjudge.discovery._identify import (
    Identification,
    IdentifiedFactor,
    factor_column,
    identify,
    identify_async,
    score_items,
    score_items_async,
)
from fairjudge.discovery._modules import PRE_DISCOVERED, SpendCapStop
from fairjudge.discovery._offline import (
    Factor,
    HashingEmbedder,
    LoadedFactors,
    OfflineDiscovery,
    discover_offline,
    load_factors,
    minilm_embedder,
    resolve_embedder,
    sentence_transformer_embedder,
    sentences,
    with_factor_covariates,
)
from fairjudge.discovery._probes import factor_probes, factor_probes_async, probe_kind_name
from fairjudge.discovery._quantify import (
    LEVELS,
    BiasFactor,
    FactorQuantification,
    Quantification,
    load_factor_definitions,
    quantify,
    quantify_async,
)
from fairjudge.discovery._sets import (
    AGREE,
    DISAGREE,
    SET_ASIDE,
    HumanAgreement,
    Splits,
    agreement_cases,
    disagreement_cases,
    explain_empty,
    human_agreement,
    split_sets,
)
from fairjudge.discovery._templates import (
    MODULE_TEMPLATES,
    ModuleTemplate,
    load_module_templates,
)

__all__ = ["AGREE", "agreement_cases", "BiasFactor", "DISAGREE", "disagreement_cases",
           "discover_offline", "explain_empty", "Factor", "factor_column", "factor_probes",
           "factor_probes_async", "FactorQuantification", "HashingEmbedder", "human_agreement",
           "HumanAgreement", "Identification", "IdentifiedFactor", "identify", "identify_async",
           "LEVELS", "load_factor_definitions", "load_factors", "load_module_templates",
           "LoadedFactors", "minilm_embedder", "MODULE_TEMPLATES", "ModuleTemplate",
           "OfflineDiscovery", "PRE_DISCOVERED", "probe_kind_name", "Quantification", "quantify",
           "quantify_async", "resolve_embedder", "score_items", "score_items_async",
           "sentence_transformer_embedder", "sentences", "SET_ASIDE", "SpendCapStop", "split_sets",
           "Splits", "with_factor_covariates"]
