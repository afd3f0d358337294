"""A Drain-style online log clusterer (He et al., ICWS 2017) for one stream.

The parse tree is fixed-depth: the first level is the line's shape (word count and
separators, see tokens.py), the next `prefix_words` levels are its leading words (a
word holding a digit, or one arriving at a full node, takes the wildcard branch), and
a leaf holds clusters. A line joins the most similar cluster of its leaf when the share
of template words it equals reaches `similarity`; the differing words of that cluster
become variables. Otherwise it starts a new cluster. Clusters are evicted least
recently used beyond `max_clusters`. A line without words (`}`, `***`) joins only lines
of identical text, so its pattern is the line itself (stream.py skips such lines).
Templates only ever generalise (a literal becomes a variable, never back), so a
cluster's current pattern matches every line it counted.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from svclog.pattern.samples import Samples
from svclog.pattern.tokens import Tokens, has_digit, render

_ANY = object()  # the wildcard branch of a tree node


@dataclass(frozen=True)
class DrainSettings:
    similarity: float = 0.3
    prefix_words: int = 2
    max_children: int = 32
    max_clusters: int = 300


@dataclass(eq=False)
class Cluster:
    """A template (None marks a variable word) and the counts of the lines it absorbed."""

    id: int
    words: list[str | None]
    seps: tuple[str, ...]
    leaf: list[Cluster]
    size: int = 0
    samples: Samples | None = None
    _pattern: str | None = None

    @property
    def pattern(self) -> str:
        if self._pattern is None:
            self._pattern = render(self.words, self.seps)
        return self._pattern

    def score(self, words: tuple[str, ...]) -> tuple[float, int]:
        """(share of words equal to the template's literals, number of variables).

        A line without words shares its leaf only with the lines of identical text (the
        tree's first level is the separators), so it is fully similar to their cluster."""
        if not words:
            return 1.0, 0
        same = variables = 0
        for mine, theirs in zip(self.words, words):
            if mine is None:
                variables += 1
            elif mine == theirs:
                same += 1
        return same / len(words), variables

    def absorb(self, words: tuple[str, ...]) -> None:
        for i, (mine, theirs) in enumerate(zip(self.words, words)):
            if mine is not None and mine != theirs:
                self.words[i] = None
                self._pattern = None
        self.size += 1


class Drain:
    def __init__(self, settings: DrainSettings | None = None):
        self.settings = settings or DrainSettings()
        self._roots: dict[tuple, dict] = {}
        self._clusters: OrderedDict[int, Cluster] = OrderedDict()
        self._next_id = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._clusters)

    def clusters(self) -> list[Cluster]:
        return list(self._clusters.values())

    def train(self, tokens: Tokens) -> Cluster:
        """Add one line; return the cluster that now counts it."""
        leaf = self._leaf(tokens)
        best = self._best(leaf, tokens.words)
        if best is None:
            best = Cluster(self._next_id, list(tokens.words), tokens.seps, leaf)
            self._next_id += 1
            leaf.append(best)
            self._clusters[best.id] = best
            self._evict()
        else:
            self._clusters.move_to_end(best.id)
        best.absorb(tokens.words)
        return best

    def remove(self, cluster: Cluster) -> None:
        if self._clusters.pop(cluster.id, None) is not None:
            cluster.leaf.remove(cluster)

    def _best(self, leaf: list[Cluster], words: tuple[str, ...]) -> Cluster | None:
        best, best_score = None, (-1.0, -1)
        for cluster in leaf:
            score = cluster.score(words)
            if score > best_score:
                best, best_score = cluster, score
        if best is None or best_score[0] < self.settings.similarity:
            return None
        return best

    def _leaf(self, tokens: Tokens) -> list[Cluster]:
        node = self._roots.setdefault(tokens.signature, {})
        limit = self.settings.max_children
        for word in tokens.words[: self.settings.prefix_words]:
            if word in node:
                node = node[word]
            elif has_digit(word) or len(node) >= limit:
                node = node.setdefault(_ANY, {})
            else:
                node = node.setdefault(word, {})
        return node.setdefault(None, [])

    def _evict(self) -> None:
        while len(self._clusters) > self.settings.max_clusters:
            _, oldest = self._clusters.popitem(last=False)
            oldest.leaf.remove(oldest)
            self.evicted += 1
