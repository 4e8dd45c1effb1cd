// Command oracle judges pods with kube-scheduler v1.30's own framework and in-tree
// plugins, so that optimist's shard code is tested against upstream itself rather
// than against a second reading of it written in this project.
//
// It reads one request per line on stdin (a KubeSchedulerConfiguration, the
// nodes, the pods already on them, the namespaces and the pod to place, all as
// the API server would hold them) and writes one verdict per line on stdout:
// each Filter plugin's status on every node when it runs alone, the framework's
// feasible set when they run together, and on that set each Score plugin's raw,
// normalised and weighted score and the total. A test dependency only.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the API server's defaults for pods and nodes
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

type request struct {
	Configuration json.RawMessage `json:"configuration"` // kubescheduler.config.k8s.io/v1
	Profile       string          `json:"profile"`       // a schedulerName; "" for the first
	Nodes         []v1.Node       `json:"nodes"`
	Pods          []v1.Pod        `json:"pods"` // bound pods, spec.nodeName set
	Namespaces    []v1.Namespace  `json:"namespaces"`
	// what selects pods for PodTopologySpread's default constraints
	Services               []v1.Service               `json:"services"`
	ReplicationControllers []v1.ReplicationController `json:"replicationControllers"`
	ReplicaSets            []appsv1.ReplicaSet        `json:"replicaSets"`
	StatefulSets           []appsv1.StatefulSet       `json:"statefulSets"`
	// what the volume plugins read
	PersistentVolumes      []v1.PersistentVolume      `json:"persistentVolumes"`
	PersistentVolumeClaims []v1.PersistentVolumeClaim `json:"persistentVolumeClaims"`
	StorageClasses         []storagev1.StorageClass   `json:"storageClasses"`
	CSINodes               []storagev1.CSINode        `json:"csiNodes"`
	CSIDrivers             []storagev1.CSIDriver      `json:"csiDrivers"`
	Pod                    v1.Pod                     `json:"pod"`
}

type status struct {
	Code    string   `json:"code"`
	Plugin  string   `json:"plugin,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

type weighted struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight"`
}

type verdict struct {
	Error   string   `json:"error,omitempty"`
	Filters []string `json:"filters"` // the profile's Filter plugins, in order
	// its Score plugins and weights, in order
	Scorers []weighted `json:"scorers"`
	// plugin -> node -> status, each plugin's PreFilter and Filter run alone
	Alone map[string]map[string]status `json:"alone"`
	// the framework's run: PreFilter's status, each rejected node's, the feasible nodes
	PreFilter status            `json:"prefilter"`
	Rejected  map[string]status `json:"rejected"`
	Feasible  []string          `json:"feasible"`
	// on the feasible nodes, plugin -> node -> score; skipped plugins are absent
	Raw        map[string]map[string]int64 `json:"raw"`
	Normalized map[string]map[string]int64 `json:"normalized"`
	Totals     map[string]int64            `json:"totals"`
}

func main() {
	klog.SetOutput(os.Stderr)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var v verdict
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			v = verdict{Error: fmt.Sprintf("request: %v", err)}
		} else if judged, err := judge(&req); err != nil {
			v = verdict{Error: err.Error()}
		} else {
			v = *judged
		}
		if err := out.Encode(&v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// profile decodes the configuration as kube-scheduler does (v1 defaults, the
// default plugins merged in, validation) and picks the named profile.
func profile(raw []byte, name string) (*config.KubeSchedulerProfile, error) {
	obj, err := runtime.Decode(scheme.Codecs.UniversalDecoder(), raw)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("configuration: a %T, not a KubeSchedulerConfiguration", obj)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	for i := range cfg.Profiles {
		if name == "" || cfg.Profiles[i].SchedulerName == name {
			return &cfg.Profiles[i], nil
		}
	}
	return nil, fmt.Errorf("configuration: no profile %q", name)
}

func judge(req *request) (*verdict, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prof, err := profile(req.Configuration, req.Profile)
	if err != nil {
		return nil, err
	}
	pod := req.Pod.DeepCopy()
	legacyscheme.Scheme.Default(pod)
	nodes := make([]*v1.Node, len(req.Nodes))
	for i := range req.Nodes {
		nodes[i] = req.Nodes[i].DeepCopy()
		legacyscheme.Scheme.Default(nodes[i])
	}
	bound := make([]*v1.Pod, len(req.Pods))
	for i := range req.Pods {
		bound[i] = req.Pods[i].DeepCopy()
		legacyscheme.Scheme.Default(bound[i])
	}
	snap := newSnapshot(nodes, bound)

	// the listers some plugins build on (namespaces for namespaceSelector; Services
	// and controllers for PodTopologySpread's default constraints; storage classes and
	// CSINodes for the volume plugins), filled straight into their informers' stores:
	// starting informers would cost a resync wait per request. Claims and volumes are
	// the client's, listed by their informers, whose handlers fill VolumeBinding's caches.
	client := fake.NewSimpleClientset(append(objects(req.PersistentVolumes), objects(req.PersistentVolumeClaims)...)...)
	shared := informers.NewSharedInformerFactory(client, 0)
	factory := watchedFactory{shared, &watched{}}
	stores := []struct {
		store   cache.Store
		objects []runtime.Object
	}{
		{shared.Core().V1().Namespaces().Informer().GetStore(), objects(req.Namespaces)},
		{shared.Core().V1().Services().Informer().GetStore(), objects(req.Services)},
		{shared.Core().V1().ReplicationControllers().Informer().GetStore(), objects(req.ReplicationControllers)},
		{shared.Apps().V1().ReplicaSets().Informer().GetStore(), objects(req.ReplicaSets)},
		{shared.Apps().V1().StatefulSets().Informer().GetStore(), objects(req.StatefulSets)},
		{shared.Storage().V1().StorageClasses().Informer().GetStore(), objects(req.StorageClasses)},
		{shared.Storage().V1().CSINodes().Informer().GetStore(), objects(req.CSINodes)},
		{shared.Storage().V1().CSIDrivers().Informer().GetStore(), objects(req.CSIDrivers)},
	}
	for _, s := range stores {
		for _, obj := range s.objects {
			if err := s.store.Add(obj); err != nil {
				return nil, fmt.Errorf("%T: %w", obj, err)
			}
		}
	}

	instances := map[string]framework.Plugin{}
	registry := frameworkruntime.Registry{}
	for name, factoryFn := range plugins.NewInTreeRegistry() {
		name, factoryFn := name, factoryFn
		registry[name] = func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
			p, err := factoryFn(ctx, args, h)
			if err == nil {
				instances[name] = p
			}
			return p, err
		}
	}
	fwk, err := frameworkruntime.NewFramework(ctx, registry, prof,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", prof.SchedulerName, err)
	}
	if err := factory.watched.run(ctx); err != nil {
		return nil, err
	}
	listed := fwk.ListPlugins()
	v := &verdict{
		Alone:      map[string]map[string]status{},
		Rejected:   map[string]status{},
		Feasible:   []string{},
		Raw:        map[string]map[string]int64{},
		Normalized: map[string]map[string]int64{},
		Totals:     map[string]int64{},
	}
	preFilters := sets.New[string]()
	for _, p := range listed.PreFilter.Enabled {
		preFilters.Insert(p.Name)
	}
	for _, p := range listed.Filter.Enabled {
		v.Filters = append(v.Filters, p.Name)
		v.Alone[p.Name] = alone(ctx, instances[p.Name], preFilters.Has(p.Name), pod, snap)
	}
	weights := map[string]int64{}
	for _, p := range listed.Score.Enabled {
		v.Scorers = append(v.Scorers, weighted{p.Name, p.Weight})
		weights[p.Name] = int64(p.Weight)
	}

	state := framework.NewCycleState()
	pre, s := fwk.RunPreFilterPlugins(ctx, state, pod)
	v.PreFilter = of(s, "")
	if !s.IsSuccess() {
		return v, nil
	}
	var feasible []*framework.NodeInfo
	for _, info := range snap.list {
		name := info.Node().Name
		if !pre.AllNodes() && !pre.NodeNames.Has(name) {
			v.Rejected[name] = status{Code: framework.UnschedulableAndUnresolvable.String(), Plugin: "PreFilter"}
			continue
		}
		if s := fwk.RunFilterPlugins(ctx, state, pod, info); !s.IsSuccess() {
			v.Rejected[name] = of(s, "")
			continue
		}
		feasible = append(feasible, info)
		v.Feasible = append(v.Feasible, name)
	}
	if len(feasible) == 0 {
		return v, nil
	}
	if s := fwk.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
		return nil, fmt.Errorf("PreScore: %v", s.AsError())
	}
	scores, s := fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !s.IsSuccess() {
		return nil, fmt.Errorf("Score: %v", s.AsError())
	}
	for _, node := range scores {
		v.Totals[node.Name] = node.TotalScore
		for _, ps := range node.Scores {
			if v.Normalized[ps.Name] == nil {
				v.Normalized[ps.Name] = map[string]int64{}
				v.Raw[ps.Name] = map[string]int64{}
			}
			v.Normalized[ps.Name][node.Name] = ps.Score / weights[ps.Name]
			raw, rs := instances[ps.Name].(framework.ScorePlugin).Score(ctx, state, pod, node.Name)
			if !rs.IsSuccess() {
				return nil, fmt.Errorf("Score %s on %s: %v", ps.Name, node.Name, rs.AsError())
			}
			v.Raw[ps.Name][node.Name] = raw
		}
	}
	return v, nil
}

// objects are the items of a list, each a copy, as an informer's store holds them.
func objects[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		item := items[i]
		out[i] = P(&item)
	}
	return out
}

// alone runs one Filter plugin, with its own PreFilter, on every node, as if the
// profile had no other: which nodes it alone rejects, and why.
func alone(ctx context.Context, p framework.Plugin, hasPreFilter bool, pod *v1.Pod, snap *snapshot) map[string]status {
	got := map[string]status{}
	state := framework.NewCycleState()
	var pre *framework.PreFilterResult
	if hasPreFilter {
		r, s := p.(framework.PreFilterPlugin).PreFilter(ctx, state, pod)
		if s.IsSkip() {
			for _, info := range snap.list {
				got[info.Node().Name] = status{Code: framework.Success.String()}
			}
			return got
		}
		if !s.IsSuccess() {
			for _, info := range snap.list {
				got[info.Node().Name] = of(s, p.Name())
			}
			return got
		}
		pre = r
	}
	for _, info := range snap.list {
		name := info.Node().Name
		if !pre.AllNodes() && !pre.NodeNames.Has(name) {
			got[name] = status{Code: framework.UnschedulableAndUnresolvable.String(), Plugin: p.Name()}
			continue
		}
		got[name] = of(p.(framework.FilterPlugin).Filter(ctx, state, pod, info), p.Name())
	}
	return got
}

// of is a status as JSON (a nil status is Success), naming the plugin that gave it:
// `plugin`, or where that is empty the one the framework set.
func of(s *framework.Status, plugin string) status {
	if s.IsSuccess() {
		return status{Code: framework.Success.String()}
	}
	if plugin == "" {
		plugin = s.Plugin()
	}
	return status{Code: s.Code().String(), Plugin: plugin, Reasons: s.Reasons()}
}
