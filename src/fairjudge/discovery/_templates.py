"""The prompts of HUB-J's LLM modules as versioned templates [hubj-bias-discovery App. H].

Each template has ``{{field}}`` placeholders; the texts it shows (questions and responses)
are fenced as judge prompts fence answers (:func:`fairjudge.judges.fence_text`), and a
line of a shown text that would read as one of the template's own section headers
(``# Rewritten response``, ``RESPONSE TO EVALUATE:``) is shown in parentheses, so a
response cannot close its own section. The version enters every cache key: change it when
a prompt's text changes. A user overrides a template with a JSON file
``{"name": {"version": ..., "system": ..., "user": ...}}`` (:func:`load_module_templates`).

The feature extraction (G_extract), factor proposal (G_construct), assignment (G_assign),
criteria (G_crit), injection (G_inj) and scoring (G_score) prompts are the paper's. Two
additions to G_assign, because §3.2 lets it abstain but its prompt shows no way to: the
factors are numbered from 1 and 0 means "none of them"; and the answer is asked as an
integer (the paper's example shows an empty string). Features and earlier factors are
LLM output that can carry text copied from a response, so they are fenced like responses.
The answer-preservation verifier and the placebo paraphrase are fairjudge's: the paper
reports an answer-change rate (Fig. 4) without giving its prompt, and names no placebo.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from fairjudge._util._files import read_json_file
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._prompts import fence_text
from fairjudge.judges._types import Message

_FIELD = re.compile(r"\{\{([a-z][a-z_0-9]*)\}\}")
#: Fields holding outside text (fenced when rendered).
SHOWN_FIELDS = frozenset({"question", "answer", "response", "original", "rewritten",
                          "response_1", "response_2", "feature", "feature_examples",
                          "prev_factors"})


@dataclass(frozen=True)
class ModuleTemplate:
    """A named, versioned prompt of an LLM module.

    Attributes
    ----------
    name, version : str
    system, user : str
        Text with ``{{field}}`` placeholders.
    """

    name: str
    version: str
    system: str
    user: str

    @property
    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.system + self.user))

    @property
    def headers(self) -> frozenset:
        """The template's own section headers: its lines that start with ``#`` or end with
        a colon, placeholders aside (``# Existing response``, ``RESPONSE TO EVALUATE:``)."""
        lines = (line.strip() for line in (self.system + "\n" + self.user).splitlines())
        return frozenset(_normal(line) for line in lines if line and "{{" not in line
                         and (line.startswith("#") or line.endswith(":")))

    def render(self, **values) -> tuple:
        """The chat messages, every placeholder filled in one pass (text inside a value is
        never expanded again); outside texts are fenced.

        Raises
        ------
        FairjudgeInputError
            If a field has no value.
        """
        missing = sorted(self.fields - set(values))
        if missing:
            raise FairjudgeInputError(f"template {self.name!r} needs `{missing[0]}`")
        text = {k: self._fenced(str(v)) if k in SHOWN_FIELDS else str(v)
                for k, v in values.items()}

        def fill(template: str) -> str:
            return _FIELD.sub(lambda m: text[m.group(1)], template)

        messages = (Message("user", fill(self.user)),)
        if self.system:
            messages = (Message("system", fill(self.system)),) + messages
        return messages

    def _fenced(self, text: str) -> str:
        """``text`` with judge-prompt delimiters neutralised (:func:`fence_text`) and every
        line that would read as one of this template's own headers shown in parentheses,
        so a shown response cannot close its section and open a forged one."""
        headers = self.headers
        lines = fence_text(text).split("\n")
        return "\n".join(f"({line.strip()})" if _normal(line) in headers else line
                         for line in lines)


_CRITERIA = ModuleTemplate(
    "hubj-criteria", "1",
    "You are an expert researcher studying systematic biases in LLM-as-a-Judge systems.\n\n"
    "Your task is to convert a bias definition into a Likert-scale describing the "
    "*intensity* of the bias manifestation in a response.\n\n"
    "The scale must describe observable characteristics of generated text.",
    "Bias Name: {{bias_name}}\n\nDefinition:\n{{definition}}\n\n"
    "Generate Likert-scale criteria describing how strongly this bias manifests in a "
    "response.\n\nIMPORTANT CONSTRAINTS\n\nThe scale must represent ONLY the intensity of "
    "the bias manifestation.\n\nDo NOT imply that any level is good, bad, better, worse, "
    "excessive, or insufficient.\n\nAvoid words expressing evaluation or sentiment such as:"
    "\nbetter, worse, excessive, weak, poor, strong, good, bad, desirable.\n\nInstead "
    "describe only measurable or observable properties.\n\nExamples of acceptable "
    "descriptions:\n\n- number of sections\n- amount of formatting\n- number of citations\n"
    "- token length ranges\n- degree of repetition\n- number of examples\n- density of "
    "emotional wording\n- density of hedging phrases\n\nEach level should represent a "
    "gradual increase in intensity.\n\nScale definition\n\n1 = minimal presence of the "
    "bias-related characteristic\n5 = very high presence of the bias-related characteristic"
    "\n\nEach level must:\n\n- describe what the response text looks like\n- be "
    "distinguishable from adjacent levels\n- reflect a monotonic increase in intensity\n"
    "- use approximate ranges when possible\n\nOutput format:\n\n"
    '{"likert_criteria": {"1": "<description>", "2": "<description>", "3": "<description>",'
    ' "4": "<description>", "5": "<description>"}}\n\nReturn ONLY valid JSON.\n'
    "Do NOT include markdown or explanations.")

_INJECT = ModuleTemplate(
    "hubj-inject", "1", "You are a careful rewriter.",
    "# Task\nYou will be given an instruction, an existing response, and a description\nof "
    "a bias to inject. Rewrite the existing response so that it naturally\nreflects the "
    "described bias in its reasoning, style, structure, or\nemphasis without changing what "
    "the response actually answers.\n\n# Requirements\n1. **Preserve the answer.** Any "
    "factual content that determines whether\nthe response is correct (the final answer, "
    "named entities,\nquantities, enumerated list items, code, equations, quoted text,\n"
    "dates, and logical conclusions) MUST be preserved exactly as in the\noriginal response. "
    "Do not add, remove, reorder, or paraphrase\nanswer-bearing items. If the original "
    "answer is a list of N items,\nthe rewrite also contains exactly those N items in the "
    "same order.\n2. **Inject the bias naturally.** Adjust reasoning, framing, tone,\n"
    "emphasis, structure, vocabulary, or surrounding narration so that\nthe rewrite exhibits "
    "the behavior described in the bias criterion\nbelow. The bias should be a property of "
    "*how* the response is\nwritten, not of *what* it answers.\n3. **Length follows the "
    "criterion, not the original.** If the bias\ncriterion implies a shorter or longer "
    "response (e.g. verbosity,\nlist length, narrative expansion, jargon density), change "
    "the\nlength accordingly. Otherwise keep the length close to the\noriginal. Do not pad "
    "with filler; do not truncate answer-bearing\ncontent.\n4. **No meta language.** Do not "
    'mention the words "bias", "criterion",\n"Likert", "rewrite", or refer to the '
    "instructions you were given.\nThe rewrite should read as a natural standalone response."
    "\n5. **Output only the rewritten response.** No preamble, no explanation,\nno headers "
    'like "Rewritten:".\n\n# Bias to inject\nName: {{bias_name}}\nDefinition: '
    "{{definition}}\nTarget behavior: {{criterion}}\n\n# Instruction\n{{question}}\n\n"
    "# Existing response\n{{answer}}\n\n# Rewritten response")

_SCORE = ModuleTemplate(
    "hubj-score", "1", "You are a helpful assistant that outputs JSON.",
    "You are an objective evaluator grading an AI response.\nScore the following response "
    "on a scale of 1 to 5 based STRICTLY on the criteria below.\nYou must select EXACTLY ONE "
    "score.\n\nDo not explain your reasoning.\nOutput ONLY the JSON object.\n\nBIAS FACTOR: "
    "{{bias_name}}\n\nBIAS DEFINITION: {{definition}}\n\nCRITERIA:\n{{criteria_json}}\n\n"
    "USER QUESTION:\n{{question}}\n\nRESPONSE TO EVALUATE:\n{{response}}\n\nReturn STRICTLY "
    'a JSON object with a single integer value:\n{"score": <integer 1-5>}')

_VERIFY = ModuleTemplate(
    "hubj-verify", "1", "You are a careful checker that outputs JSON.",
    "Two responses answer the same instruction. The second is a rewrite of the first that "
    "may change style, tone, structure or length. Decide whether the rewrite still gives "
    "the same answer: the same final answer, named entities, quantities, list items (same "
    "number, same order), code, equations and conclusions.\n\n# Instruction\n{{question}}"
    "\n\n# Original response\n{{original}}\n\n# Rewritten response\n{{rewritten}}\n\n"
    'Return STRICTLY a JSON object: {"same_answer": true | false}')

_PARAPHRASE = ModuleTemplate(
    "hubj-paraphrase", "1", "You are a careful rewriter.",
    "Paraphrase the response below. Keep its content, length (within 10%), structure, "
    "formatting, tone and every answer-bearing item (final answer, named entities, "
    "quantities, list items, code) exactly; change only the wording of the surrounding "
    "sentences. Output only the paraphrased response.\n\n# Instruction\n{{question}}\n\n"
    "# Response\n{{answer}}\n\n# Paraphrased response")

_EXTRACT = ModuleTemplate(
    "hubj-extract", "1", "",
    "You are given a case where a human evaluator and an LLM judge evaluated two responses "
    "to a query and disagreed on which response is better.\n\nThe human label is treated as "
    "the ground truth. The LLM judge's disagreement therefore reflects a potential "
    "systematic bias.\n\nYour task is to extract interpretable features that explain why "
    "the LLM judge may have been biased toward its choice, causing it to deviate from the "
    "human ground truth.\n\nInputs:\n\n- Original user query\n- r1 (Response 1) and r2 "
    "(Response 2)\n- human_label: what the human preferred (\"r1\", \"r2\", or \"tie\")\n"
    "- model_chose: what the LLM judge chose (\"r1\", \"r2\", or \"tie\")\n\nThese always "
    "disagree. Your goal is to find features in the response pairs that may have unfairly "
    "swayed the LLM judge away from the human's judgment.\n\nIMPORTANT:\n\n- Focus on "
    "features that explain the gap between human judgment and LLM judgment, not just general "
    "quality differences.\n- Also consider whether the judge may prefer answers that sound "
    "more expert, more scientific, more emotional, more supportive, more professional, more "
    "teacher-like, more friend-like, more neutral, more experienced, or more number-heavy.\n"
    "- Avoid vague labels like \"better quality\", \"more helpful\", \"clearer\", \"better "
    "written\", or \"more structured\".\n- Avoid near-duplicate features unless they are "
    "clearly distinct.\n- Make sure the feature names are interpretable and easy to "
    "understand. A human should be able to understand them when they see it.\n\nFor each "
    "feature:\n\n1) feature_name: short, interpretable feature label\n2) reason: how this "
    "specific feature likely caused the LLM judge to deviate from the human label in this "
    "case\n3) definition: 1-2 sentence general definition of this bias pattern in "
    "LLM-as-Judge contexts\n\nReturn STRICT JSON only in this exact format:\n\n"
    '{"features": [{"feature_name": "", "reason": "", "definition": ""}], '
    '"definitions": {"feature_name_1": "definition ...", "feature_name_2": '
    '"definition ..."}}\n\nOriginal user query:\n\n{{question}}\n\nr1 (Response 1):\n\n'
    "{{response_1}}\n\nr2 (Response 2):\n\n{{response_2}}\n\nHuman preferred: "
    "{{human_label}}\n\nLLM judge chose: {{model_chose}}")

_CONSTRUCT = ModuleTemplate(
    "hubj-construct", "1", "",
    "You are an expert in analyzing LLM-as-a-judge behavior and organizing extracted bias "
    "features into high-level, interpretable factors.\n\nYOUR TASK: Identify EXACTLY "
    "{{num_factors}} meaningful, high-level bias factors that cause LLM judges to disagree "
    "with human evaluators.\n\nEach factor should represent a distinct, human-readable bias "
    "pattern that can organize multiple related features into one coherent category.\n\nThe "
    "goal is to propose factors that are:\n\n- interpretable (The name itself must be "
    "understandable immediately to a human reader.)\n- diverse and unique\n- distinctive and "
    "not related to each other\n\nIMPORTANT:\n\n- Focus on creating distinct, "
    "non-overlapping bias factors.\n- Make sure the factors are strictly NOT RELATED to each "
    "other.\n- They should NOT be similar to each other. Do not propose multiple factors that "
    "are close paraphrases of each other.\n- Avoid overconcentrating on only structural, "
    "semantic, or clarity-related dimensions.\n- Make sure the factor names are "
    "interpretable and easy to understand. A human should be able to understand them when "
    "they see it.\n- Each factor should be broad enough to group multiple related features, "
    "but specific enough to remain interpretable.\n- Do not write definitions in the form of "
    "\"LLM judges prefer...\" or \"LLMs tend to prefer...\".\n- Instead, write definitions "
    "in a generalized style, beginning with phrases such as \"The tendency to favor...\", \"A "
    "pattern where...\", or \"The tendency for responses with...\".\n\nRESPONSE FORMAT:\n\n"
    "Return a JSON object with the following structure:\n\n"
    '{"factors": [{"name": "FactorName", "definition": "A clear, concise definition of this '
    'factor and how it influences the judge."}]}\n\nProvide EXACTLY {{num_factors}} '
    "factors.\n\nFeature Examples:\n{{feature_examples}}\n\nPrevious Factors:\n"
    "{{prev_factors}}")

_ASSIGN = ModuleTemplate(
    "hubj-assign", "1", "",
    "Your task is to assign a specific LLM bias feature to the most appropriate high-level "
    "bias factor category.\n\nNote: These features were extracted from cases of human-model "
    "disagreement, where an LLM judge's choice diverged from a human evaluator's ground-truth "
    "label. They explain the specific characteristics that influenced the LLM judge to "
    "choose differently from the human label, resulting in a biased evaluation.\n\nThe "
    "available bias factors were generated through an analysis of these systematic "
    "vulnerabilities to create meaningful, orthogonal categories that capture the "
    "fundamental biases exhibited by LLM judges.\n\nSYSTEMATIC ASSIGNMENT PROCESS:\n\n"
    "1. Identify the systematic bias or heuristic described in the feature.\n2. Extract the "
    "MAIN mechanism causing the LLM to diverge from human preference.\n3. Match this to the "
    "bias factor that BEST characterizes this specific blind spot.\n4. Verify that this "
    "factor accurately captures the CORE BIAS being exposed.\n\nGUIDELINES:\n\n- Assign "
    "the feature to the bias factor that best explains why the LLM judged the text "
    "differently than a human would.\n- Choose the factor that best points out the specific "
    "reason the LLM chose differently than the human.\n- If no available factor sufficiently "
    "explains the feature, answer 0.\n\nReturn your assignment as a JSON object with this "
    'structure:\n\n{"assignments": <integer>}  // the number of the available factor, or '
    "0 for none of them\n\nFollowing the systematic assignment process, analyze the given "
    "feature and assign it to the appropriate bias factor category that best characterizes "
    "what judge bias it exposes:\n\nfeature:\n{{feature}}\n\nAvailable Bias Factors:\n"
    "{{formatted_factors}}")

#: The built-in module templates by name.
MODULE_TEMPLATES = {t.name: t for t in (_EXTRACT, _CONSTRUCT, _ASSIGN, _CRITERIA, _INJECT,
                                        _SCORE, _VERIFY, _PARAPHRASE)}


def _normal(line: str) -> str:
    """A header line compared loosely: case, spacing and ``#`` marks aside."""
    return re.sub(r"\s+", " ", line.strip().lstrip("#").strip().lower())


def load_module_templates(path=None) -> dict:
    """The built-in module templates, overridden by a user's JSON file
    ``{"hubj-inject": {"system": ..., "user": ..., "version": ...}}``. A template without a
    version gets one derived from its text, so an edit never reuses stale cached calls.

    Raises
    ------
    FairjudgeInputError
        For an unknown template name, or a field the built-in template does not have.
    """
    templates = dict(MODULE_TEMPLATES)
    if path is None:
        return templates
    data = read_json_file(path, "template")
    for name, spec in (data.items() if isinstance(data, dict) else []):
        if name not in MODULE_TEMPLATES:
            raise FairjudgeInputError(f"{path}: unknown module template {name!r}; have "
                                      f"{', '.join(MODULE_TEMPLATES)}")
        if not isinstance(spec, dict) or not isinstance(spec.get("user"), str):
            raise FairjudgeInputError(f"{path}: template {name!r} needs a `user` text")
        system, user = str(spec.get("system", "")), spec["user"]
        version = str(spec.get("version") or "user-" + hashlib.sha256(
            (system + "\x1f" + user).encode()).hexdigest()[:12])
        template = ModuleTemplate(name, version, system, user)
        extra = template.fields - MODULE_TEMPLATES[name].fields
        if extra:
            raise FairjudgeInputError(f"{path}: template {name!r} uses `{sorted(extra)[0]}`, "
                                      f"which it is never given (it has "
                                      f"{', '.join(sorted(MODULE_TEMPLATES[name].fields))})")
        templates[name] = template
    return templates
