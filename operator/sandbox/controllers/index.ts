/**
 * The simulated kube-controller-manager (Deployment, ReplicaSet, StatefulSet, HorizontalPodAutoscaler,
 * disruption, EndpointSlice, Endpoints and clusterrole-aggregation controllers, garbage collector),
 * kube-scheduler and kubelet of the sandbox, talking to it through
 * {@link ClusterAccess} under their real user agents — so their requests are counted, and their
 * writes carry the field managers a real cluster shows (`kube-controller-manager`, `kubelet`).
 */
import type { ClusterAccess, KubeObject } from '../types.ts'
import { Client, controllerAgent, deployments, pods, replicaSets, statefulSets, type GVR } from './client.ts'
import { ClusterRoleAggregation } from './clusterrole-aggregation.ts'
import { DeploymentController } from './deployment.ts'
import { DisruptionController, podDisruptionBudgets } from './disruption.ts'
import { EndpointsController, endpointSlices, endpoints, services } from './endpoints.ts'
import { EventSink } from './events.ts'
import { GarbageCollector } from './gc.ts'
import { HorizontalPodAutoscalerController, horizontalPodAutoscalers } from './hpa.ts'
import { Informer } from './informer.ts'
import { Kubelet } from './kubelet.ts'
import type { PodFailures } from './pod-failures.ts'
import { ReplicaSetController } from './replicaset.ts'
import { controllerRevisions, StatefulSetController } from './statefulset.ts'

/** Options of {@link startControllers}. */
export interface ControllerOptions {
  /** How long a new pod stays Pending before the kubelet reports it Running and Ready. */
  podReadyDelayMs: number
  /**
   * Period of the controllers' resync that queues every cached object again. By default what
   * kube-controller-manager's informers use: `--min-resync-period` (12 h) times a random factor
   * in [1, 2) (cmd/kube-controller-manager/app/controllermanager.go `ResyncPeriod`); their work
   * otherwise comes from watch events and their queues' retries. Tests set a short one.
   */
  resyncMs?: number
  /** Count the components' requests in the sandbox's request accounting (default true). */
  account?: boolean
  /** Rules that make pods fail as a kubelet would (pod-failures.ts); none: every pod becomes ready. */
  podFailures?: PodFailures
  /** How often each HorizontalPodAutoscaler is reconciled (`--horizontal-pod-autoscaler-sync-period`, default 15 s). */
  hpaSyncPeriodMs?: number
}

/** The built-in kinds with a `/scale` subresource, by group/kind (what an HPA may target). */
const scalable: Record<string, GVR> = {
  'apps/Deployment': deployments,
  'apps/ReplicaSet': replicaSets,
  'apps/StatefulSet': { group: 'apps', version: 'v1', resource: 'statefulsets' },
}

/** kube-controller-manager's `--min-resync-period` default (k8s.io/controller-manager config/v1alpha1 defaults.go). */
const MIN_RESYNC_MS = 12 * 60 * 60 * 1000
/** The period of the kubelet's look at its pods, the garbage collector's sweep and the Events' expiry. */
const HOUSEKEEPING_MS = 30_000

const crds: GVR = { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' }
const clusterRoles: GVR = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' }

interface CRDView {
  spec?: { group?: string; scope?: string; names?: { plural?: string; kind?: string }; versions?: { name?: string; served?: boolean; storage?: boolean }[] }
  status?: { conditions?: { type?: string; status?: string }[] }
}

/** The served version of an Established CRD the collector should watch (storage version preferred). */
function servedResource(crd: KubeObject): { gvr: GVR; kind: string; namespaced: boolean } | undefined {
  const view = crd as unknown as CRDView
  if (!view.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return undefined
  const versions = (view.spec?.versions ?? []).filter((v) => v.served && v.name)
  const v = versions.find((x) => x.storage) ?? versions[0]
  const plural = view.spec?.names?.plural
  if (!v?.name || !plural || !view.spec?.group) return undefined
  return { gvr: { group: view.spec.group, version: v.name, resource: plural }, kind: view.spec.names?.kind ?? '', namespaced: view.spec.scope !== 'Cluster' }
}

/**
 * Starts the controllers. They begin acting once their caches have listed; `stop()` ends every
 * watch, timer and worker (and waits for requests in flight).
 */
export function startControllers(access: ClusterAccess, opts: ControllerOptions): { stop(): Promise<void> } {
  const account = opts.account ?? true
  const informerClient = new Client(access, controllerAgent('shared-informers'), account)
  const podInformer = new Informer(informerClient, pods, undefined, { byNamespace: true, byLabel: true })
  const pdbInformer = new Informer(informerClient, podDisruptionBudgets, undefined, { byNamespace: true })
  const serviceInformer = new Informer(informerClient, services)
  const sliceInformer = new Informer(informerClient, endpointSlices)
  const endpointsInformer = new Informer(informerClient, endpoints)
  const rsInformer = new Informer(informerClient, replicaSets)
  const deploymentInformer = new Informer(informerClient, deployments)
  const setInformer = new Informer(informerClient, statefulSets)
  const revisionInformer = new Informer(informerClient, controllerRevisions)
  const crdInformer = new Informer(informerClient, crds)
  const roleInformer = new Informer(informerClient, clusterRoles)
  const aggregation = new ClusterRoleAggregation(new Client(access, controllerAgent('clusterrole-aggregation-controller'), account), roleInformer)

  const eventSink = new EventSink()
  const deploymentClient = new Client(access, controllerAgent('deployment-controller'), account)
  const deploymentController = new DeploymentController(deploymentClient, deploymentInformer, rsInformer, eventSink.recorder('deployment-controller', deploymentClient))
  const rsClient = new Client(access, controllerAgent('replicaset-controller'), account)
  const rsController = new ReplicaSetController(rsClient, rsInformer, podInformer, eventSink.recorder('replicaset-controller', rsClient))
  const setClient = new Client(access, controllerAgent('statefulset-controller'), account)
  const setController = new StatefulSetController(setClient, setInformer, revisionInformer, podInformer, eventSink.recorder('statefulset-controller', setClient))
  const disruptionClient = new Client(access, controllerAgent('disruption-controller'), account)
  const disruption = new DisruptionController(disruptionClient, { pdbs: pdbInformer, pods: podInformer, replicaSets: rsInformer, deployments: deploymentInformer, statefulSets: setInformer }, eventSink.recorder('controllermanager', disruptionClient))
  const endpointsController = new EndpointsController(
    { slices: new Client(access, controllerAgent('endpointslice-controller'), account), endpoints: new Client(access, controllerAgent('endpoints-controller'), account) },
    { services: serviceInformer, pods: podInformer, slices: sliceInformer, endpoints: endpointsInformer },
  )
  const kubelet = new Kubelet(
    new Client(access, 'kube-scheduler/v1.34.0 (linux/amd64) kubernetes/sandbox/scheduler', account),
    new Client(access, 'kubelet/v1.34.0 (linux/amd64) kubernetes/sandbox', account),
    podInformer,
    opts.podReadyDelayMs,
    opts.podFailures,
  )
  // The HPA controller's REST mapping: built-in scalable kinds, and each Established CRD's kind.
  const crdKinds = new Map<string, { crd: string; gvr: GVR }>()
  const hpaInformer = new Informer(informerClient, horizontalPodAutoscalers)
  const resolveTarget = (apiVersion: string, kind: string): GVR | undefined => {
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
    return scalable[`${group}/${kind}`] ?? crdKinds.get(`${group}/${kind}`)?.gvr
  }
  const hpaClient = new Client(access, controllerAgent('horizontal-pod-autoscaler'), account)
  const hpaController = new HorizontalPodAutoscalerController(hpaClient, hpaInformer, resolveTarget, opts.hpaSyncPeriodMs ?? 15_000, eventSink.recorder('horizontal-pod-autoscaler', hpaClient))
  const gc = new GarbageCollector(new Client(access, controllerAgent('generic-garbage-collector'), account), [podInformer, rsInformer, deploymentInformer, setInformer, revisionInformer])

  let stopped = false
  const pending = new Set<Promise<void>>()
  const track = (p: Promise<void>) => {
    const t = p.catch(() => undefined).finally(() => pending.delete(t))
    pending.add(t)
  }
  crdInformer.on((type, crd) => {
    const name = crd.metadata.name ?? ''
    const served = type === 'DELETED' ? undefined : servedResource(crd)
    for (const [k, v] of crdKinds) if (v.crd === name) crdKinds.delete(k)
    if (served) crdKinds.set(`${served.gvr.group}/${served.kind}`, { crd: name, gvr: served.gvr })
    if (!served) gc.removeCustomResource(name)
    else if (!stopped) track(gc.addCustomResource(name, served.gvr, served.kind, served.namespaced))
  })

  const started = (async () => {
    await Promise.all([podInformer.start(), rsInformer.start(), deploymentInformer.start(), setInformer.start(), revisionInformer.start(), hpaInformer.start(), pdbInformer.start(), serviceInformer.start(), sliceInformer.start(), endpointsInformer.start(), crdInformer.start(), roleInformer.start(), gc.start()])
    if (stopped) return
    aggregation.resync()
    deploymentController.run()
    rsController.run()
    setController.run()
    hpaController.run()
    disruption.run()
    endpointsController.run()
    gc.run()
    kubelet.resync()
  })()
  track(started)

  const timer = setInterval(() => {
    deploymentController.resync()
    rsController.resync()
    setController.resync()
    hpaController.resync()
    disruption.resync()
    endpointsController.resync()
  }, opts.resyncMs ?? Math.round(MIN_RESYNC_MS * (1 + Math.random())))
  timer.unref()
  // Housekeeping on its own clock: the kubelet's look at its pods (its sync loop), the garbage
  // collector's sweep of dependents whose owner it has not seen.
  const housekeeping = setInterval(() => {
    kubelet.resync()
    gc.sweep()
  }, Math.min(opts.resyncMs ?? HOUSEKEEPING_MS, HOUSEKEEPING_MS))
  housekeeping.unref()

  return {
    async stop() {
      if (stopped) return
      stopped = true
      clearInterval(timer)
      clearInterval(housekeeping)
      for (const inf of [podInformer, rsInformer, deploymentInformer, setInformer, revisionInformer, hpaInformer, pdbInformer, serviceInformer, sliceInformer, endpointsInformer, crdInformer, roleInformer]) inf.stop()
      // Each stop() halts its timers and watches at once, then waits for work in flight.
      const halted = [deploymentController.stop(), rsController.stop(), setController.stop(), hpaController.stop(), disruption.stop(), endpointsController.stop(), kubelet.stop(), gc.stop(), aggregation.stop()]
      await Promise.allSettled([...pending])
      await Promise.all(halted)
      await eventSink.stop()
    },
  }
}
