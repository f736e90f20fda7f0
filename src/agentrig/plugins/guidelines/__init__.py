"""The guidelines plug-in (``kind = "guidelines"``): see ``plugin.py`` for what it does and its
settings, ``filemodel.py`` for the file it reads (written by ``agentrig guidelines derive``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrig.errors import ConfigError
from agentrig.plugins import register
from agentrig.plugins.base import PluginSettings

from . import filemodel
from .filemodel import Guideline, GuidelinesFile, file_sha
from .plugin import GuidelinesPlugin, GuidelinesSettings, parse_settings


class GuidelinesFactory:
    """Builds one ``GuidelinesPlugin`` per trial; the file is read once per process and content."""

    roles = ()  # calls no model

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, GuidelinesFile]] = {}  # path -> (sha, file)

    def with_paths(self, settings: PluginSettings, source: Path) -> PluginSettings:
        """The settings with ``file`` made absolute (relative to the experiment file)."""
        options = settings.options()
        file = options.get("file")
        if not isinstance(file, str) or not file or Path(file).is_absolute():
            return settings
        options["file"] = str((Path(source).parent / file).expanduser().resolve())
        return PluginSettings.model_validate({"kind": settings.kind, **options})

    def _read(self, path: str, where: str = "") -> tuple[str, GuidelinesFile]:
        p = Path(path).expanduser()
        if not p.is_file():
            head = f"{where}: " if where else ""
            raise ConfigError(f"{head}plug-in \"guidelines\": file {p} not found.\n"
                              "  fix: give the path of a guidelines file (relative to the experiment file), "
                              "written by `agentrig guidelines derive RUN --out FILE`")
        sha = file_sha(p)
        cached = self._cache.get(str(p))
        if cached is not None and cached[0] == sha:
            return cached
        try:
            gf = filemodel.load(p)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
        self._cache[str(p)] = (sha, gf)
        return sha, gf

    def check(self, settings: PluginSettings, where: str = "") -> GuidelinesSettings:
        parsed = parse_settings(settings.options(), where)
        self._read(parsed.file, where)
        return parsed

    def comparable(self, settings: PluginSettings) -> dict[str, Any]:
        """The plug-in in the comparability snapshot: its settings with the file's content hash and
        its provenance (source run, arm, split, source tasks) instead of the file's path."""
        parsed = parse_settings(settings.options())
        sha, gf = self._read(parsed.file)
        pv = gf.provenance
        out = {"kind": settings.kind, **parsed.model_dump(mode="json", exclude={"file"})}
        out.update(file_sha=sha, guidelines=len(gf.guidelines), source_run=pv.run_id, source_arm=pv.arm,
                   source_split=pv.split, source_tasks=sorted(pv.source_tasks))
        return out

    def __call__(self, settings: PluginSettings, ctx: Any) -> GuidelinesPlugin:
        key = getattr(ctx, "key", None)
        where = f"arm {key.arm!r}" if key is not None else ""
        parsed = parse_settings(settings.options(), where)
        sha, gf = self._read(parsed.file, where)
        return GuidelinesPlugin(parsed, gf, sha, ctx)


factory = GuidelinesFactory()
register("guidelines", factory)

__all__ = ["Guideline", "GuidelinesFactory", "GuidelinesFile", "GuidelinesPlugin", "GuidelinesSettings",
           "factory", "file_sha", "parse_settings"]
