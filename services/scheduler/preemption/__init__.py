"""Preemption (upstream pkg/scheduler/framework/preemption): the evaluator's decision
(evaluator.py), victims and the choice of node (victims.py), and its effects through the
client (executor.py). The DefaultPreemption plugin (plugins/defaultpreemption.py) runs it."""

from services.scheduler.preemption.evaluator import (
    DISRUPTION_TARGET,
    NOT_HELPFUL,
    POLICY_NEVER,
    PREEMPTION_BY_SCHEDULER,
    TERMINATING_ON_NOMINATED,
    Decision,
    Evaluator,
    calculate_num_candidates,
    pod_eligible_to_preempt_others,
)
from services.scheduler.preemption.executor import (
    PreemptionClient,
    disruption_message,
    prepare_candidate,
    set_nominated_node_name,
)
from services.scheduler.preemption.victims import (
    NO_VICTIMS,
    Candidate,
    filter_pods_with_pdb_violation,
    more_important,
    pick_one_node_for_preemption,
    select_victims_on_node,
)

__all__ = [
    "DISRUPTION_TARGET",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "POLICY_NEVER",
    "PREEMPTION_BY_SCHEDULER",
    "TERMINATING_ON_NOMINATED",
    "Candidate",
    "Decision",
    "Evaluator",
    "PreemptionClient",
    "calculate_num_candidates",
    "disruption_message",
    "filter_pods_with_pdb_violation",
    "more_important",
    "pick_one_node_for_preemption",
    "pod_eligible_to_preempt_others",
    "prepare_candidate",
    "select_victims_on_node",
    "set_nominated_node_name",
]
