package main

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// snapshot is the scheduler's view of the cluster for one cycle, built as its
// cache builds one (the cache itself is internal to kube-scheduler): a NodeInfo
// per node with its bound pods, and each image's size and how many nodes hold it.
type snapshot struct {
	list   []*framework.NodeInfo
	byName map[string]*framework.NodeInfo
	// the claims (namespace/name) the bound pods use, as the cache's snapshot keeps them
	usedClaims sets.Set[string]
}

var _ framework.SharedLister = (*snapshot)(nil)

func newSnapshot(nodes []*v1.Node, pods []*v1.Pod) *snapshot {
	s := &snapshot{byName: map[string]*framework.NodeInfo{}, usedClaims: sets.New[string]()}
	images := map[string]*framework.ImageStateSummary{}
	for _, node := range nodes {
		info := framework.NewNodeInfo()
		info.SetNode(node)
		// as the cache: an image's size is the one the first node to report it gave
		info.ImageStates = map[string]*framework.ImageStateSummary{}
		for _, image := range node.Status.Images {
			for _, name := range image.Names {
				state, ok := images[name]
				if !ok {
					state = &framework.ImageStateSummary{Size: image.SizeBytes, Nodes: sets.New[string]()}
					images[name] = state
				}
				state.Nodes.Insert(node.Name)
				if _, ok := info.ImageStates[name]; !ok {
					info.ImageStates[name] = state
				}
			}
		}
		s.list = append(s.list, info)
		s.byName[node.Name] = info
	}
	for _, state := range images {
		state.NumNodes = len(state.Nodes)
	}
	for _, pod := range pods {
		if info, ok := s.byName[pod.Spec.NodeName]; ok {
			info.AddPod(pod)
		}
	}
	for _, info := range s.list {
		for claim := range info.PVCRefCounts {
			s.usedClaims.Insert(claim)
		}
	}
	return s
}

func (s *snapshot) NodeInfos() framework.NodeInfoLister       { return s }
func (s *snapshot) StorageInfos() framework.StorageInfoLister { return s }

func (s *snapshot) List() ([]*framework.NodeInfo, error) { return s.list, nil }

func (s *snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return s.having(func(n *framework.NodeInfo) bool { return len(n.PodsWithAffinity) > 0 }), nil
}

func (s *snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return s.having(func(n *framework.NodeInfo) bool { return len(n.PodsWithRequiredAntiAffinity) > 0 }), nil
}

func (s *snapshot) having(keep func(*framework.NodeInfo) bool) []*framework.NodeInfo {
	var got []*framework.NodeInfo
	for _, n := range s.list {
		if keep(n) {
			got = append(got, n)
		}
	}
	return got
}

func (s *snapshot) Get(name string) (*framework.NodeInfo, error) {
	if info, ok := s.byName[name]; ok {
		return info, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
}

func (s *snapshot) IsPVCUsedByPods(key string) bool { return s.usedClaims.Has(key) }
