"""Generated cited answers and random cuts of them, for the streaming tests and benchmarks: several
citations per sentence, ranges, invalid pointers, markers leading the next sentence, hidden markup,
an image's alt text, newlines and characters outside the BMP."""
import random

PASSAGES = ["Statins lower LDL cholesterol in adults with high cardiovascular risk.",
            "Mitochondria produce ATP through oxidative phosphorylation in the inner membrane.",
            "The Great Barrier Reef has lost half of its coral cover since 1995.",
            "Vaccination reduced measles incidence by more than ninety percent.",
            "Deep sea vents host chemosynthetic bacteria that fix carbon without light."]
CLAIMS = ["Statins lower LDL cholesterol", "Mitochondria produce ATP", "The reef lost half its coral",
          "Measles fell after vaccination", "Vents host chemosynthetic bacteria", "Café owners disagree 😀",
          "Results vary — see 𝔸 below", "No evidence exists here"]
MARKERS = ["[1]", "[2]", "[3]", "[4]", "[5]", "[1, 2]", "[2-4]", "[9]", "[1][3]", "[12]", "[1–2]", "[0]"]


def answer(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 7)):
        claim = rng.choice(CLAIMS)
        marks = "".join(rng.choice(MARKERS) for _ in range(rng.randint(0, 3)))
        end = rng.choice([".", "!", "?", "."])
        form = rng.random()
        if form < 0.25 and marks:
            s = f"{claim}{end} {marks}"  # the markers lead the next piece: they belong to this sentence
        elif form < 0.35:
            s = f"{claim} <!-- hidden [3]. Text --> more {marks}{end}"
        elif form < 0.42:
            s = f"{claim} <span hidden>[2] secret. Claim</span> {marks}{end}"
        elif form < 0.48:  # an image's alt: drawn where the image does not load, so checked and failed closed
            s = f'{claim} <img src="f.png" alt="{rng.choice(CLAIMS)}. Alt {marks}"> more {marks}{end}'
        else:
            s = f"{claim} {marks}{end}"
        out.append(s)
        out.append(rng.choice([" ", " ", "  ", "\n", "\n\n", " \n"]))
    return "".join(out).rstrip() if rng.random() < 0.7 else "".join(out)


def pieces(text: str, rng: random.Random) -> list[str]:
    """The text cut at random UTF-16 code-unit boundaries, as JSON strings carry it: a character outside
    the BMP may arrive as its two surrogate halves in two pieces."""
    units = text.encode("utf-16-le", "surrogatepass")
    cuts = sorted(rng.sample(range(1, len(units) // 2), min(len(units) // 2 - 1, rng.randint(1, 40)))) if len(units) > 2 else []
    out, prev = [], 0
    for c in [*cuts, len(units) // 2]:
        out.append(units[2 * prev:2 * c].decode("utf-16-le", "surrogatepass"))
        prev = c
    return out


def code_point_pieces(text: str, rng: random.Random) -> list[str]:
    """The text cut at random character boundaries (never inside a character)."""
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 30)))) if len(text) > 1 else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
