"""The state graph as DOT, in the layout of TLC's `-dump dot` output."""

from __future__ import annotations

import networkx as nx

from .views import state_label


def dot_text(graph: nx.DiGraph) -> str:
    """The graph in the layout of TLC's `-dump dot`: a strict digraph, initial states filled,
    every edge labelled with its action."""
    lines = ["strict digraph DiskGraph {", "nodesep=0.35", "subgraph cluster_graph {", 'color="white"']
    for node, data in graph.nodes(data=True):
        style = ",style = filled" if data["initial"] else ""
        lines.append(f'{_node_id(node)} [label="{_escape(state_label(data["state"]))}"{style}]')
    for source, target, action in graph.edges(data="action"):
        lines.append(f'{_node_id(source)} -> {_node_id(target)} [label="{_escape(str(action))}",'
                     'color="black",fontcolor="black"];')
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def _node_id(key: int) -> int:
    return key - (1 << 64) if key >= 1 << 63 else key  # TLC prints signed 64-bit fingerprints


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
