#!/bin/sh
# Joins a spot instance to a Kubernetes cluster at first boot, and labels its Node
# with its instance ID (how spotpool finds an instance's Node, and where the notice
# agent runs). cloud-init runs it once: give it to a pool base64-encoded as
# spec.userData (examples/nodes-pool.yaml; at most 16 KB encoded).
#
# The image must have containerd, kubelet and kubeadm installed and enabled (TKE's
# AddExistedInstances does not take spot instances: it reinstalls the OS).
#
# Fill in the three values below from `kubeadm token create --print-join-command` on
# a control-plane node. The token is readable by whoever can read the Spotpool and
# the instance's metadata: give it a short TTL (--ttl 24h) and rotate it with the pool
# (a changed spec.userData applies to the instances launched from then on).
#
# A pool with spec.nodeTemplate: its labels and taints are applied here, as the Node
# registers (before any pod can land on it). Fill in the two values below with what
# `spotpool dry-run -f POOL.yaml` prints as "node template (kubelet flags)"
# (examples/pool-autoscaling.yaml); empty for none. The kubelet refuses labels under
# kubernetes.io/ and k8s.io/ other than its own (node.kubernetes.io/, ...).
set -eu
API_SERVER="10.0.0.10:6443"
TOKEN="abcdef.0123456789abcdef"
CA_HASH="sha256:0000000000000000000000000000000000000000000000000000000000000000"
NODE_LABELS=""
NODE_TAINTS=""
JOIN_CONFIG=${JOIN_CONFIG:-/etc/kubernetes/spotpool-join.yaml}

META=http://metadata.tencentyun.com/latest/meta-data
id=$(curl -fsS --retry 10 --retry-connrefused "$META/instance-id")
ip=$(curl -fsS --retry 10 --retry-connrefused "$META/local-ipv4")

# The template's taints, only when there are any (the kubelet's flag takes no empty list).
taints=""
[ -z "$NODE_TAINTS" ] || taints="register-with-taints: \"$NODE_TAINTS\""

# Named by its private IP, as TKE names Nodes (NodeNameType lan-ip), and with that
# address as its InternalIP (node-ip): spotpool honours the label only together with
# the private IP the cloud reports for the instance (docs/how-it-works.md#nodes).
cat >"$JOIN_CONFIG" <<CONFIG
apiVersion: kubeadm.k8s.io/v1beta3
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "$API_SERVER"
    token: "$TOKEN"
    caCertHashes: ["$CA_HASH"]
nodeRegistration:
  name: "$ip"
  kubeletExtraArgs:
    node-labels: "spotpool.jokerbai.com/instance-id=$id${NODE_LABELS:+,$NODE_LABELS}"
    node-ip: "$ip"
    $taints
CONFIG
kubeadm join --config "$JOIN_CONFIG"
