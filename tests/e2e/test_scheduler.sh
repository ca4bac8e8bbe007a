#!/usr/bin/env bash
# The test control plane's real kube-scheduler (start_cluster --scheduler), the test
# playing the kubelet: a pod asking for a GPU is Unschedulable while only a CPU Node
# exists, is bound by the scheduler once a GPU Node registers (tainted, labelled, a
# GPU allocatable), and a pod whose nodeSelector no Node matches stays Unschedulable.
source "$(dirname "$0")/lib.sh"

start_cluster --scheduler
check "kube-scheduler runs (pid $(cat "$E2E_TMP/k8s/scheduler.pid" 2>/dev/null))" \
	bash -c "kill -0 \$(cat '$E2E_TMP/k8s/scheduler.pid')"

TAINT='[{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}]'
TOLERATE='{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}'
check "a CPU Node registers, Ready" gpu_node cpu-0 "" 10.0.1.1 0
check "a pod asking for nvidia.com/gpu: 1" gpu_pod default train 1 "$TOLERATE"
check "it is Unschedulable: Insufficient nvidia.com/gpu" \
	wait_for 20 pod_unschedulable default train "Insufficient nvidia.com/gpu"
check "nothing bound it" pod_bound default train ""

check "a GPU Node registers (1 GPU allocatable, gpu-pool=a10, tainted nvidia.com/gpu)" \
	gpu_node gpu-0 "" 10.0.1.2 1 '{"gpu-pool":"a10"}' "$TAINT"
check "the scheduler binds the pod to gpu-0" wait_for 20 pod_bound default train gpu-0

check "a pod for gpu-pool=h100" gpu_pod default h100 1 "$(jq -c '. + {nodeSelector: {"gpu-pool": "h100"}}' <<<"$TOLERATE")"
check "it is Unschedulable: no Node matches its selector" \
	wait_for 20 pod_unschedulable default h100 "didn't match Pod's node affinity/selector"
check "nothing bound it" pod_bound default h100 ""
finish
