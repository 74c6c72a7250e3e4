"""The class at a glance: REPORT_DIR/report.html, and the same numbers as CSV in class_report/.

One self-contained page (inline CSS and SVG; no script, no request to any network): the
distribution of totals, the questions missed most, the common wrong answers, the code cases
failed most, the statuses, the learning objectives. A pure function of the verdicts, so a merged
report is identical to a single run's. The page is the jinja2 template templates/report.html.j2; the SVG
figures stay Python (arithmetic on coordinates). See docs/grading.md, "The class at a glance: report.html".
"""
from __future__ import annotations

import functools
import html
import statistics
from collections import Counter
from dataclasses import dataclass, field

import jinja2
from markupsafe import Markup

from ..exercise import Exercise
from ..questions.kinds import Code
from ..verdict import INCORRECT, NOT_ATTEMPTED, SUBMITTED, Graded, Status, format_points
from .files import csv_text, inert
from .gradebook import flagged_readings, reference_hits

__all__ = ["ClassStats", "compute", "class_report_files", "render_html", "csv_files"]

TOP_ANSWERS = 5
TOP_CASES = 10

COLOURS = {"full": "#1b9e77", "partial": "#e6ab02", "zero": "#d95f02", "not attempted": "#b8b8b8",
           "submitted": "#7570b3", "graded": "#4477aa", "not graded": "#cc6677", "bar": "#4477aa"}


# --------------------------------------------------------------------------- the numbers


@dataclass
class QuestionStats:
    id: str
    title: str
    kind: str
    points: float
    auto_scored: bool
    objectives: tuple = ()
    n: int = 0
    counts: Counter = field(default_factory=Counter)  # full / partial / zero / not attempted / submitted
    total_points: float = 0.0

    @property
    def mean_points(self) -> float | None:
        return self.total_points / self.n if self.n and self.auto_scored else None

    @property
    def mean_fraction(self) -> float | None:
        mean = self.mean_points
        return mean / self.points if mean is not None and self.points else None

    def share(self, category: str) -> float:
        return self.counts[category] / self.n if self.n else 0.0


@dataclass
class WrongAnswer:
    question: str
    answer: str
    count: int
    answered: int  # graded submissions that gave any answer the grader could read
    feedback: str


@dataclass
class CaseFailure:
    question: str
    index: int
    call: str
    topic: str
    failed: int
    attempted: int


@dataclass
class ObjectiveStats:
    objective: str
    questions: tuple[str, ...]
    points: float  # earned by the graded submissions on these questions
    possible: float

    @property
    def mean_fraction(self) -> float | None:
        return self.points / self.possible if self.possible else None


@dataclass
class ClassStats:
    exercise: Exercise
    totals: list[float]  # every submission
    graded_totals: list[float]  # status "graded" only
    bins: list[tuple[float, float, int, int]]  # (from, to, graded, not graded); `to` None: exactly full marks
    questions: list[QuestionStats]  # hardest first, then free text
    wrong: dict[str, list[WrongAnswer]]
    cases: dict[str, list[CaseFailure]]
    topics: dict[str, list[tuple[str, int, int]]]  # question -> (topic, cases, failures), most failed first
    attempted: dict[str, int]  # code question -> graded submissions whose function ran
    statuses: dict[str, list[str]]  # status -> students, sorted
    objectives: list[ObjectiveStats]
    reference_hits: list = field(default_factory=list)  # (student, question, what): see report.reference_hits
    flagged: list = field(default_factory=list)  # (student, question, what): see gradebook.flagged_readings


def _category(outcome) -> str:
    if outcome.status == NOT_ATTEMPTED:
        return "not attempted"
    if outcome.status == SUBMITTED:
        return "submitted"
    if outcome.points >= outcome.max_points > 0:
        return "full"
    return "partial" if outcome.points > 0 else "zero"


def _bins(exercise, graded) -> list:
    top = exercise.auto_points
    width = 1.0 if top <= 20 else max(1.0, round(top / 10))
    edges = []
    start = 0.0
    while start < top:
        edges.append((start, min(start + width, top)))
        start += width
    counts = {edge: [0, 0] for edge in edges}
    full = [0, 0]
    for g in graded:
        slot = 0 if g.status == Status.GRADED else 1
        if g.total >= top:
            full[slot] += 1
            continue
        for lo, hi in edges:
            if lo <= g.total < hi or (g.total < 0 and lo == 0):
                counts[(lo, hi)][slot] += 1
                break
    return [(lo, hi, *counts[(lo, hi)]) for lo, hi in edges] + [(top, None, *full)]


def _call(question, index: int) -> str:
    """How a case reads: its call, or its number for a case that cannot say."""
    try:
        return question.cases[index].call_text(question.name)
    except Exception:
        return f"case {index + 1}"


def _objective_key(objective) -> tuple:
    text = str(objective)
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def _question_stats(exercise, titles: dict) -> dict[str, QuestionStats]:
    """An empty QuestionStats per question, in the exercise's order."""
    return {q.id: QuestionStats(q.id, titles.get(q.id, ""), q.kind, float(q.points), q.auto_scored,
                                tuple(getattr(q, "objectives", ()) or ()))
            for q in exercise.questions}


@dataclass
class _Tally:
    """What the graded submissions answered, counted per question (from each one's answer summaries)."""

    answers: dict[str, Counter]  # question -> wrong answer -> how many gave it
    answered: Counter  # question -> submissions whose answer the grader could read
    feedback: dict[tuple[str, str], Counter]  # (question, wrong answer) -> feedback given -> how often
    failed: dict[str, Counter]  # code question -> case index -> failures
    attempted: Counter  # code question -> submissions whose function ran

    @classmethod
    def empty(cls, exercise) -> _Tally:
        return cls({q.id: Counter() for q in exercise.questions}, Counter(), {},
                   {q.id: Counter() for q in exercise.questions}, Counter())

    def count(self, outcome, summary: dict) -> None:
        """One outcome of one submission, with that question's answer summary."""
        question = outcome.question
        if "answer" in summary:
            self.answered[question] += 1
            if outcome.status == INCORRECT:
                self.answers[question][summary["answer"]] += 1
                self.feedback.setdefault((question, summary["answer"]), Counter())[outcome.message] += 1
        if "failed" in summary:
            self.attempted[question] += 1
            self.failed[question].update(summary["failed"])


def _tally(exercise, questions: dict[str, QuestionStats], ok) -> _Tally:
    """Score every outcome of the graded submissions into `questions` (in place) and into a tally."""
    tally = _Tally.empty(exercise)
    for g in ok:
        summaries = getattr(g, "answers", {}) or {}
        for o in g.outcomes:
            if o.question not in questions:
                continue
            stats = questions[o.question]
            stats.n += 1
            stats.counts[_category(o)] += 1
            stats.total_points += o.points
            tally.count(o, summaries.get(o.question, {}))
    return tally


def _hardest_first(questions: dict[str, QuestionStats]) -> list[QuestionStats]:
    """Auto-scored questions by mean score, lowest first (unanswered last), then the free-text ones."""
    order = sorted((s for s in questions.values() if s.auto_scored),
                   key=lambda s: (s.mean_fraction if s.mean_fraction is not None else 2.0, s.id))
    return order + [s for s in questions.values() if not s.auto_scored]


def _most_common(counter) -> list:
    """(item, count), most frequent first; ties in the item's order."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def _wrong_answers(exercise, tally: _Tally) -> dict[str, list[WrongAnswer]]:
    """Per question the most common wrong answers, each with the feedback most of its givers got."""
    return {q.id: [WrongAnswer(q.id, answer, count, tally.answered[q.id],
                               _most_common(tally.feedback[(q.id, answer)])[0][0])
                   for answer, count in _most_common(tally.answers[q.id])[:TOP_ANSWERS]]
            for q in exercise.questions}


def _case_failures(q, tally: _Tally) -> list[CaseFailure]:
    """The cases of a code question that failed most."""
    ranked = _most_common(tally.failed[q.id])[:TOP_CASES]
    return [CaseFailure(q.id, i, _call(q, i), getattr(q.cases[i], "topic", ""), n, tally.attempted[q.id])
            for i, n in ranked if 0 <= i < len(q.cases)]


def _topics(q, failed: Counter) -> list[tuple[str, int, int]]:
    """(topic, cases, failures) of a code question, the most failed (per case) first."""
    by_topic: dict[str, list[int]] = {}
    for i, case in enumerate(q.cases):
        entry = by_topic.setdefault(getattr(case, "topic", "") or "(no topic)", [0, 0])
        entry[0] += 1
        entry[1] += failed.get(i, 0)
    return sorted(((t, n, f) for t, (n, f) in by_topic.items()), key=lambda item: (-item[2] / item[1], item[0]))


def _statuses(graded) -> dict[str, list[str]]:
    """Status -> students (in the order given: sorted)."""
    statuses: dict[str, list[str]] = {}
    for g in graded:
        statuses.setdefault(str(g.status), []).append(g.student)
    return statuses


def _objectives(questions: dict[str, QuestionStats]) -> list[ObjectiveStats]:
    """Per learning objective, its questions and the points the graded submissions earned on them."""
    objective_points: dict[str, list] = {}
    for s in questions.values():
        for objective in s.objectives:
            entry = objective_points.setdefault(str(objective), [[], 0.0, 0.0])
            entry[0].append(s.id)
            if s.auto_scored:
                entry[1] += s.total_points
                entry[2] += s.points * s.n
    return [ObjectiveStats(key, tuple(v[0]), v[1], v[2])
            for key, v in sorted(objective_points.items(), key=lambda item: _objective_key(item[0]))]


def compute(exercise, graded, titles: dict | None = None) -> ClassStats:
    """Every number the page and the CSV files show (`titles`: {question id: title}, optional)."""
    graded = sorted(graded, key=lambda g: g.student)
    ok = [g for g in graded if g.status == Status.GRADED]
    questions = _question_stats(exercise, titles or {})
    tally = _tally(exercise, questions, ok)
    code = [q for q in exercise.questions if isinstance(q, Code)]
    cases = {q.id: _case_failures(q, tally) for q in code}
    topics = {q.id: _topics(q, tally.failed[q.id]) for q in code}
    return ClassStats(exercise, [g.total for g in graded], [g.total for g in ok], _bins(exercise, graded),
                      _hardest_first(questions), _wrong_answers(exercise, tally), cases, topics,
                      {q: tally.attempted[q] for q in cases}, _statuses(graded), _objectives(questions),
                      reference_hits(graded), flagged_readings(graded))


# --------------------------------------------------------------------------- CSV


def _num(value, digits: int = 4) -> str:
    if value is None:
        return ""
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if value else "0"


def csv_files(stats: ClassStats) -> dict[str, str]:
    """class_report/*.csv: the page's numbers, one table per section."""
    top = stats.exercise.auto_points
    distribution = csv_text(["from", "to", "graded", "not_graded"],
                          [(format_points(lo), format_points(hi) if hi is not None else format_points(top), a, b)
                           for lo, hi, a, b in stats.bins])
    categories = ["full", "partial", "zero", "not attempted", "submitted"]
    questions = csv_text(
        ["question", "kind", "title", "max_points", "graded_submissions", "mean_points", "mean_fraction",
         *[f"share_{c.replace(' ', '_')}" for c in categories], *[f"count_{c.replace(' ', '_')}" for c in categories],
         "objectives"],
        [(s.id, s.kind, s.title, format_points(s.points), s.n, _num(s.mean_points), _num(s.mean_fraction),
          *[_num(s.share(c)) for c in categories], *[s.counts[c] for c in categories],
          " ".join(str(o) for o in s.objectives)) for s in stats.questions])
    wrong = csv_text(["question", "answer", "count", "answered", "share_of_answered", "feedback"],
                   [(w.question, w.answer, w.count, w.answered, _num(w.count / w.answered if w.answered else None),
                     w.feedback) for s in stats.questions for w in stats.wrong.get(s.id, [])])
    cases = csv_text(["question", "case", "call", "topic", "failed", "attempted", "share_failed"],
                   [(c.question, c.index + 1, c.call, c.topic, c.failed, c.attempted,
                     _num(c.failed / c.attempted if c.attempted else None))
                    for s in stats.questions for c in stats.cases.get(s.id, [])])
    topics = csv_text(["question", "topic", "cases", "attempted", "failures", "share_failed"],
                    [(s.id, topic, n, stats.attempted[s.id], f, _topic_share(stats, s.id, n, f))
                     for s in stats.questions for topic, n, f in stats.topics.get(s.id, [])])
    statuses = csv_text(["status", "count", "students"],
                      [(status, len(names), " ".join(names)) for status, names in _status_order(stats.statuses)])
    objectives = csv_text(["objective", "questions", "mean_fraction"],
                        [(o.objective, " ".join(o.questions), _num(o.mean_fraction)) for o in stats.objectives])
    return {"class_report/distribution.csv": distribution, "class_report/questions.csv": questions,
            "class_report/wrong_answers.csv": wrong, "class_report/code_cases.csv": cases,
            "class_report/code_topics.csv": topics, "class_report/statuses.csv": statuses,
            "class_report/objectives.csv": objectives}


def _topic_share(stats: ClassStats, question: str, cases: int, failures: int) -> str:
    runs = cases * stats.attempted.get(question, 0)
    return _num(failures / runs if runs else None)


def _status_order(statuses: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """Problems first (in the gradebook's order of statuses), "graded" last."""
    known = [str(s) for s in Status if s != Status.GRADED]
    keyed = sorted(statuses.items(), key=lambda item: (item[0] == str(Status.GRADED),
                                                       known.index(item[0]) if item[0] in known else len(known),
                                                       item[0]))
    return keyed


# --------------------------------------------------------------------------- SVG figures

FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def _esc(text) -> str:
    """HTML text of a value: made `inert` (no escape sequences or invisible characters, one line), then escaped."""
    return html.escape(inert(text), quote=True)


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (f'<svg class="figure" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {FONT} font-size="12"><title>{_esc(title)}</title>'
            + "".join(body) + "</svg>")


def histogram_svg(stats: ClassStats) -> str:
    """Totals of every submission, graded (blue) and not graded (red) stacked."""
    bins = stats.bins
    width, height, left, bottom, top = 720, 260, 44, 40, 16
    plot_w, plot_h = width - left - 12, height - top - bottom
    highest = max([a + b for _, _, a, b in bins] + [1])
    step = plot_w / len(bins)
    body = [f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>']
    for tick in _ticks(highest):
        y = top + plot_h - plot_h * tick / highest
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e4e4e4"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    for i, (lo, hi, a, b) in enumerate(bins):
        x = left + i * step + 3
        y = top + plot_h
        for count, colour, what in ((a, COLOURS["graded"], "graded"), (b, COLOURS["not graded"], "not graded")):
            if count:
                h = plot_h * count / highest
                y -= h
                label = f"{_range_label(lo, hi)} points: {count} {what}"
                body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{step - 6:.1f}" height="{h:.1f}" '
                            f'fill="{colour}"><title>{_esc(label)}</title></rect>')
        if a + b:
            body.append(f'<text x="{x + (step - 6) / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">{a + b}</text>')
        body.append(f'<text x="{x + (step - 6) / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                    f'{_esc(_range_label(lo, hi))}</text>')
    body.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">automatically graded '
                f'points (bars hold scores from the left value up to the right one; the last bar is full marks)</text>')
    return _svg(width, height, "Distribution of the totals", body)


def _range_label(lo: float, hi: float | None) -> str:
    return format_points(lo) if hi is None else f"{format_points(lo)}–{format_points(hi)}"


def _ticks(highest: int) -> list[int]:
    step = max(1, -(-highest // 5))
    return list(range(step, highest + 1, step))


def stacked_svg(rows: list[tuple[str, list[tuple[str, float]]]], title: str, label_width: int = 150) -> str:
    """One horizontal bar per row, split into coloured shares that add up to 1."""
    width, row_h = 720, 26
    plot_w = width - label_width - 60
    height = row_h * len(rows) + 30
    body = []
    for r, (label, parts) in enumerate(rows):
        y = 6 + r * row_h
        body.append(f'<text x="{label_width - 8}" y="{y + 15}" text-anchor="end">{_esc(label)}</text>')
        x = float(label_width)
        for name, share in parts:
            w = plot_w * share
            if w <= 0:
                continue
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 6}" fill="{COLOURS[name]}">'
                        f'<title>{_esc(f"{label}: {name} {share:.0%}")}</title></rect>')
            if w >= 30:
                body.append(f'<text x="{x + w / 2:.1f}" y="{y + 15}" text-anchor="middle" fill="#fff">'
                            f'{share:.0%}</text>')
            x += w
    legend_y = height - 10
    x = float(label_width)
    names = []
    for _, parts in rows:
        names += [n for n, _ in parts if n not in names]
    for name in names:
        body.append(f'<rect x="{x:.1f}" y="{legend_y - 10}" width="12" height="12" fill="{COLOURS[name]}"/>'
                    f'<text x="{x + 16:.1f}" y="{legend_y}">{_esc(name)}</text>')
        x += 30 + 7.5 * len(name)
    return _svg(width, height, title, body)


def bars_svg(rows: list[tuple[str, float, str]], title: str, label_width: int = 330) -> str:
    """Horizontal bars for shares between 0 and 1, with the value written at the end."""
    width, row_h = 720, 24
    plot_w = width - label_width - 70
    height = row_h * len(rows) + 12
    body = []
    for r, (label, share, text) in enumerate(rows):
        y = 6 + r * row_h
        w = plot_w * max(0.0, min(1.0, share))
        body.append(f'<text x="{label_width - 8}" y="{y + 14}" text-anchor="end">{_esc(label[:50])}</text>'
                    f'<rect x="{label_width}" y="{y}" width="{plot_w}" height="{row_h - 6}" fill="#f0f0f0"/>'
                    f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{row_h - 6}" fill="{COLOURS["bar"]}">'
                    f'<title>{_esc(f"{label}: {text}")}</title></rect>'
                    f'<text x="{label_width + w + 6:.1f}" y="{y + 14}">{_esc(text)}</text>')
    return _svg(width, height, title, body)


# --------------------------------------------------------------------------- the page

def _escaped(value) -> Markup:
    """A value as the page shows it: escaped by html.escape, as the figures are (&#x27; for ', &quot; for ")."""
    return value if isinstance(value, Markup) else Markup(_esc(value))


@functools.cache
def _template() -> jinja2.Template:
    # trim_blocks and lstrip_blocks: a line holding only a {% tag %} writes nothing, so the
    # template's lines are the page's lines; finalize escapes before autoescape sees the value.
    loader = jinja2.PackageLoader(__name__.rpartition(".")[0], "templates")
    environment = jinja2.Environment(loader=loader, autoescape=True,
                                     trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                     undefined=jinja2.StrictUndefined, finalize=_escaped)
    return environment.get_template("report.html.j2")


def _heading(s: QuestionStats) -> str:
    points = f"{format_points(s.points)} point{'' if s.points == 1 else 's'}"
    return f"{s.id}: {s.title} ({points})" if s.title else f"{s.id} ({s.kind}, {points})"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def render_html(stats: ClassStats) -> str:
    """report.html: the template filled in with the numbers of `stats`."""
    ex = stats.exercise
    free = [q for q in ex.questions if not q.auto_scored]
    return _template().render(
        title=ex.title, id=ex.id, submissions=len(stats.totals), out_of=format_points(ex.auto_points),
        cards=_cards(stats),
        free_text=", ".join(f"{q.id} ({format_points(q.points)} points)" for q in free),
        histogram=Markup(histogram_svg(stats)) if stats.totals else None,
        questions=_questions_part(stats), wrong=_wrong_part(stats), code=_code_part(stats),
        statuses=_status_part(stats), objectives=_objectives_part(stats))


def _cards(stats: ClassStats) -> list[tuple[str, object]]:
    """(label, value) of the cards under the title."""
    top = stats.exercise.auto_points
    problems = sum(len(v) for k, v in stats.statuses.items() if k != str(Status.GRADED))

    def points(values, average):
        return format_points(average(values)) if values else "–"

    return [("submissions", len(stats.totals)), ("graded", len(stats.graded_totals)), ("not graded", problems),
            ("mean", points(stats.totals, statistics.fmean)), ("median", points(stats.totals, statistics.median)),
            ("mean of graded", points(stats.graded_totals, statistics.fmean)),
            ("full marks", sum(1 for t in stats.totals if t >= top))]


def _questions_part(stats: ClassStats) -> dict:
    """The figure of marks per question (when anything was graded) and a row per question."""
    auto = [s for s in stats.questions if s.auto_scored]
    figure = None
    if stats.graded_totals and auto:
        shares = [(f"{s.id} ({_pct(s.mean_fraction)})", [(c, s.share(c)) for c in
                                                           ("full", "partial", "zero", "not attempted")]) for s in auto]
        figure = Markup(stacked_svg(shares, "Marks per question, most missed first"))
    rows = []
    for s in stats.questions:
        if s.auto_scored:
            mean = "–" if s.mean_points is None else f"{format_points(s.mean_points)} / {format_points(s.points)}"
            cells = [_pct(s.share(c)) if s.n else "–" for c in ("full", "partial", "zero", "not attempted")]
        else:
            mean = f"marked by hand ({format_points(s.points)})"
            answered = f"{_pct(s.share('submitted'))} answered" if s.n else "–"
            cells = [answered, "", "", _pct(s.share("not attempted")) if s.n else "–"]
        rows.append({"id": s.id, "title": s.title, "kind": s.kind, "mean": mean, "shares": cells,
                     "objectives": " ".join(str(o) for o in s.objectives) or "–"})
    return {"graded": len(stats.graded_totals), "figure": figure, "rows": rows}


def _wrong_part(stats: ClassStats) -> list[dict]:
    """Per multiple-choice or numeric question, its most common wrong answers."""
    return [{"heading": _heading(s),
             "answers": [{"answer": w.answer, "count": w.count, "share": _pct(w.count / w.answered) if w.answered
                          else "–", "feedback": w.feedback} for w in stats.wrong.get(s.id, [])]}
            for s in stats.questions if s.kind in ("multiple choice", "numeric")]


def _code_part(stats: ClassStats) -> list[dict]:
    """Per code question: how many ran it, the failed share per topic (a figure), the cases failed most."""
    part = []
    for s in stats.questions:
        if s.id not in stats.cases:
            continue
        runs, figure = stats.attempted[s.id], None
        if runs:
            shares = [(topic, f / (n * runs), f"{f / (n * runs):.0%} ({f} of {n * runs} case runs)")
                      for topic, n, f in stats.topics[s.id]]
            figure = Markup(bars_svg(shares, f"{s.id}: share of failed cases by what they exercise"))
        drawn = bool(getattr(stats.exercise[s.id], "drawn_cases", False))  # each submission met its own cases
        part.append({"heading": _heading(s), "runs": runs, "cases": sum(n for _, n, _ in stats.topics[s.id]),
                     "figure": figure, "drawn": drawn,
                     "failures": [{"number": c.index + 1, "call": c.call[:120], "topic": c.topic,
                                   "failed": f"{c.failed} of {c.attempted} ({_pct(c.failed / c.attempted)})"}
                                  for c in stats.cases[s.id]]})
    return part


def _status_part(stats: ClassStats) -> dict:
    """A row per status, problems first (every name), "graded" last (the first 30 names)."""
    rows = []
    for status, names in _status_order(stats.statuses):
        problem = status != str(Status.GRADED)
        shown = ", ".join(names) if problem else (", ".join(names[:30]) + (" ..." if len(names) > 30 else ""))
        rows.append({"status": status, "problem": problem, "count": len(names), "who": shown})
    return {"rows": rows, "all_graded": not any(status != str(Status.GRADED) for status in stats.statuses),
            "reference_hits": stats.reference_hits, "flagged": stats.flagged}


def _objectives_part(stats: ClassStats) -> dict:
    """The mean score per objective, as a figure (those with graded questions) and as a table."""
    scored = [(o, fraction) for o in stats.objectives if (fraction := o.mean_fraction) is not None]
    figure = None
    if scored:
        figure = Markup(bars_svg([(f"objective {o.objective}", fraction, f"{fraction:.0%}") for o, fraction in scored],
                                 "Mean score per learning objective", label_width=160))
    rows = [{"objective": o.objective, "questions": ", ".join(o.questions),
             "mean": _pct(o.mean_fraction) if o.mean_fraction is not None else "marked by hand only"}
            for o in stats.objectives]
    return {"figure": figure, "rows": rows}


def class_report_files(exercise: Exercise, graded: list[Graded],
                       titles: dict[str, str] | None = None) -> dict[str, str]:
    """{relative path: text}: report.html and class_report/*.csv. `titles`: {question id: title}."""
    stats = compute(exercise, graded, titles)
    return {"report.html": render_html(stats), **csv_files(stats)}
