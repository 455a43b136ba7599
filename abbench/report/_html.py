"""Notebook to one self-contained HTML page: code hidden, plotly.js inlined once, nothing fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abbench import __version__
from abbench._plotly import plotly_js_source
from abbench.report._display import SUMMARY_MIMETYPE

TEMPLATES = Path(__file__).parent / "templates"
"""Where the report notebooks and the ``abbench_html`` nbconvert template live."""

TEMPLATE_NAME = "abbench_html"
HIDDEN_TAGS = frozenset({"parameters", "injected-parameters", "remove"})
"""Cells with these tags are left out of the page (papermill's parameters and helper cells)."""


def _drop_noise_preprocessor() -> Any:
    from nbconvert.preprocessors import Preprocessor

    class DropNoise(Preprocessor):
        """Leaves out stream output (stray prints, warnings on stderr) and plain-text-only results.

        A stakeholder page shows what the report cells chose to display, never a kernel's chatter (nor
        the summary left for `render_report`); the executed notebook keeps everything.
        """

        def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
            if cell.get("cell_type") == "code":
                kept = []
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "stream":
                        continue
                    data = output.get("data", {})
                    if output.get("output_type") in ("display_data", "execute_result") and set(data) <= {
                        "text/plain",
                        SUMMARY_MIMETYPE,
                    }:
                        continue
                    kept.append(output)
                cell.outputs = kept
            return cell, resources

    return DropNoise()  # type: ignore[no-untyped-call, unused-ignore]  # nbconvert is untyped


def notebook_to_html(nb: Any, *, title: str) -> str:
    """The executed notebook `nb` as the stakeholder page.

    Input cells and prompts are hidden, the parameter cells left out, widget state dropped (the
    page has no widget manager), and the page title set to `title`.
    """
    import copy

    from nbconvert import HTMLExporter
    from traitlets.config import Config

    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    nb.metadata["title"] = title
    config = Config()
    config.HTMLExporter.exclude_input = True
    config.HTMLExporter.exclude_input_prompt = True
    config.HTMLExporter.exclude_output_prompt = True
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_cell_tags = set(HIDDEN_TAGS)
    exporter = HTMLExporter(
        config=config,
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATES)],
        # include_css looks files up on the template path: report.css.
        extra_template_paths=[str(TEMPLATES / TEMPLATE_NAME)],
    )
    exporter.register_preprocessor(_drop_noise_preprocessor(), enabled=True)
    body, _ = exporter.from_notebook_node(
        nb,
        resources={
            "metadata": {"name": title},
            "abbench_version": __version__,
            "abbench_plotly_js": plotly_js_source(),
        },
    )
    return body
