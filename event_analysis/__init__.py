"""Analyse Scheduled Events histories: notice times, durations, fault-domain serialisation, reaction.

Reads the observation schema of docs/reference/observation-schema.md, whether the simulator generated
it or the collection's history callback captured it. See docs/guide/analysis.md.
"""
from event_analysis.analyses.domains import domain_overlaps, domain_walk, fault_domain_windows, walk_order
from event_analysis.analyses.endings import cancellation_rate, endings_summary, event_endings
from event_analysis.loading.history import HistoryError, HistoryWarning, LoadReport, load_history, report_of, to_parquet
from event_analysis.analyses.impact import impact_check, impact_summary
from event_analysis.analyses.lifecycles import event_lifecycles
from event_analysis.analyses.notice import notice_check, notice_summary
from event_analysis.loading.partitioned import partition_history
from event_analysis.analyses.reaction import late_preparations, reaction_summary, reaction_table
from event_analysis.loading.sources import REACTION_SAMPLE, SAMPLE_HISTORY, choose_history, default_history
from event_analysis.views import HistoryView, open_history

__all__ = [
    "REACTION_SAMPLE", "SAMPLE_HISTORY", "HistoryError", "HistoryView", "HistoryWarning", "LoadReport",
    "cancellation_rate", "choose_history", "endings_summary", "default_history", "domain_overlaps", "domain_walk", "event_endings", "event_lifecycles",
    "fault_domain_windows", "impact_check", "impact_summary", "late_preparations", "load_history", "notice_check", "notice_summary", "open_history",
    "partition_history", "reaction_summary", "reaction_table", "report_of", "to_parquet", "walk_order",
]
