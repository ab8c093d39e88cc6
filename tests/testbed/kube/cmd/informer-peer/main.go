// Command informer-peer is the client-go side of spillway's informer
// benchmark (bench/clusters/bench_informer.sh): the peer a Go controller
// author would run in place of spillway's clusters/cache. One
// SharedInformerFactory (resync 0) with typed informers on Jobs, Pods and
// Nodes in all namespaces, Pods without the terminal ones (the field
// selector spillway's cache uses), metadata.managedFields stripped by a
// transform (controller-runtime's TransformStripManagedFields does the same;
// spillway's cache strips them too). It
// waits for the caches to sync and prints one line of key=value figures:
// the time from creating the clientset to synced, heap after a GC
// (runtime.ReadMemStats, before and after), the objects cached and the
// process's RSS.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// rssKiB reads VmRSS from /proc/self/status (KiB), 0 if it cannot.
func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			v, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return v
		}
	}
	return 0
}

// stripManagedFields drops metadata.managedFields before an object is cached.
func stripManagedFields(in interface{}) (interface{}, error) {
	if o, err := meta.Accessor(in); err == nil {
		o.SetManagedFields(nil)
	}
	return in, nil
}

// cpuS is the CPU seconds this process used (user + system).
func cpuS() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func heap() (inuse, alloc uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.HeapAlloc
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	protobuf := flag.Bool("protobuf", false, "ask for application/vnd.kubernetes.protobuf, as kube-controller-manager does")
	qps := flag.Float64("qps", 50, "client-side QPS (spillway's cache uses 50)")
	burst := flag.Int("burst", 100, "client-side burst (spillway's cache uses 100)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up waiting for sync after this long")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "informer-peer: -kubeconfig is required")
		os.Exit(2)
	}
	inuse0, alloc0 := heap()
	rss0 := rssKiB()

	t0 := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "informer-peer: %v\n", err)
		os.Exit(1)
	}
	cfg.QPS = float32(*qps)
	cfg.Burst = *burst
	if *protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "informer-peer: %v\n", err)
		os.Exit(1)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTransform(stripManagedFields))
	// Pods: a factory applies one set of list options to every informer, so
	// the Pod informer with the cache's field selector is its own.
	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
		}))
	jobs := factory.Batch().V1().Jobs().Informer()
	nodes := factory.Core().V1().Nodes().Informer()
	pods := podFactory.Core().V1().Pods().Informer()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	factory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	// cache.WaitForCacheSync polls every 100 ms, which would round the time
	// up by as much; poll every millisecond instead.
	// When each informer synced: which list the time waits for.
	var at [3]time.Duration
	for !(jobs.HasSynced() && nodes.HasSynced() && pods.HasSynced()) {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "informer-peer: caches did not sync")
			os.Exit(1)
		}
		for i, inf := range []interface{ HasSynced() bool }{jobs, pods, nodes} {
			if at[i] == 0 && inf.HasSynced() {
				at[i] = time.Since(t0)
			}
		}
		time.Sleep(time.Millisecond)
	}
	synced := time.Since(t0)
	for i := range at {
		if at[i] == 0 {
			at[i] = synced
		}
	}
	cpu := cpuS()

	nj, np, nn := len(jobs.GetStore().ListKeys()), len(pods.GetStore().ListKeys()), len(nodes.GetStore().ListKeys())
	inuse1, alloc1 := heap()
	rss1 := rssKiB()
	n := nj + np + nn
	fmt.Printf("side=client-go protobuf=%t synced_s=%.3f cpu_s=%.3f jobs_s=%.3f pods_s=%.3f nodes_s=%.3f "+
		"jobs=%d pods=%d nodes=%d "+
		"heap_inuse_per_obj=%.0f heap_alloc_per_obj=%.0f heap_inuse_mib=%.1f "+
		"rss_mib=%.1f rss_delta_per_obj=%.0f\n",
		*protobuf, synced.Seconds(), cpu, at[0].Seconds(), at[1].Seconds(), at[2].Seconds(), nj, np, nn,
		float64(inuse1-inuse0)/float64(n), float64(alloc1-alloc0)/float64(n),
		float64(inuse1)/1048576, float64(rss1)/1024, float64(rss1-rss0)*1024/float64(n))
	runtime.KeepAlive(factory)
	runtime.KeepAlive(podFactory)
	runtime.KeepAlive(jobs)
	runtime.KeepAlive(pods)
	runtime.KeepAlive(nodes)
}
