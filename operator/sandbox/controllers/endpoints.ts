/**
 * The EndpointSlice controller (pkg/controller/endpointslice, k8s.io/endpointslice reconciler.go
 * and utils.go) and the Endpoints controller (pkg/controller/endpoint/endpoints_controller.go),
 * for every Service with a selector (not ExternalName):
 * - EndpointSlices `<service>-<random>` of addressType IPv4, labelled with the Service's labels plus
 *   `kubernetes.io/service-name`, `endpointslice.kubernetes.io/managed-by:
 *   endpointslice-controller.k8s.io` and, for a headless Service, `service.kubernetes.io/headless`,
 *   owned by the Service; one endpoint per pod with an IP (terminating pods included) —
 *   `addresses`, `conditions.ready` (Ready and not terminating, or `publishNotReadyAddresses`),
 *   `serving`, `terminating`, `targetRef`, `nodeName`, and `hostname` when the pod's `hostname` is
 *   set and its `subdomain` names the Service (podToEndpoint); ports from the Service's, a named
 *   `targetPort` resolved against the pod's container ports (a pod without it is served without that
 *   port: getEndpointPorts), pods grouped by their resolved ports, at most 100 per slice; a Service
 *   without pods keeps one slice with no endpoints and no ports (the placeholder).
 * - An Endpoints of the Service's name with the same labels (`endpoints.kubernetes.io/managed-by:
 *   endpoint-controller` in place of the slice's) and `endpoints.kubernetes.io/last-change-trigger-time`:
 *   Ready pods under `addresses`, others under `notReadyAddresses` (all ready with
 *   `publishNotReadyAddresses`), terminating pods left out unless `publishNotReadyAddresses`.
 */
import type { JsonObject, KubeObject } from '../types.ts'
import { Client, isConflict, isNotFound, type GVR } from './client.ts'
import { keyOf, splitKey, type Informer, WorkQueue } from './informer.ts'
import { controllerRef, isPodReady, sameJson } from './replicaset.ts'
import { mapSelectorMatches, SelectorIndex } from './selector.ts'
import { rfc3339 } from '../../kube/time.ts'

/** core/v1 services */
export const services: GVR = { group: '', version: 'v1', resource: 'services' }
/** discovery.k8s.io/v1 endpointslices */
export const endpointSlices: GVR = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' }
/** core/v1 endpoints */
export const endpoints: GVR = { group: '', version: 'v1', resource: 'endpoints' }

const serviceNameLabel = 'kubernetes.io/service-name'
const sliceManagedBy = 'endpointslice.kubernetes.io/managed-by'
const sliceController = 'endpointslice-controller.k8s.io'
const endpointsManagedBy = 'endpoints.kubernetes.io/managed-by'
const endpointsController = 'endpoint-controller'
const headlessLabel = 'service.kubernetes.io/headless'
const triggerTime = 'endpoints.kubernetes.io/last-change-trigger-time'
/** --max-endpoints-per-slice default */
const maxEndpointsPerSlice = 100

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}
function arr(v: unknown): JsonObject[] {
  return Array.isArray(v) ? v.map(obj) : []
}

interface Port {
  name: string
  port: number
  protocol: string
  appProtocol?: string
}

/** podutil.FindPort: a numeric targetPort as is, a named one among the pod's container ports. */
function findPort(pod: KubeObject, servicePort: JsonObject): number | undefined {
  const target = servicePort['targetPort'] ?? servicePort['port']
  if (typeof target === 'number') return target
  const protocol = String(servicePort['protocol'] ?? 'TCP')
  for (const c of arr(obj(pod['spec'])['containers'])) {
    for (const p of arr(c['ports'])) if (p['name'] === target && String(p['protocol'] ?? 'TCP') === protocol) return Number(p['containerPort'])
  }
  const n = Number(target)
  return typeof target === 'string' && /^\d+$/.test(target) ? n : undefined
}

function podIP(pod: KubeObject): string {
  const status = obj(pod['status'])
  return typeof status['podIP'] === 'string' ? status['podIP'] : ''
}

function isTerminal(pod: KubeObject): boolean {
  const phase = obj(pod['status'])['phase']
  return phase === 'Succeeded' || phase === 'Failed'
}

/** Keeps the EndpointSlices and Endpoints of every Service (see the module comment). */
export class EndpointsController {
  #sliceClient: Client
  #endpointsClient: Client
  #services: Informer
  #pods: Informer
  #slices: Informer
  #endpoints: Informer
  #queue: WorkQueue
  #selectors = new SelectorIndex()
  /** pod key → the Services whose endpoints listed it at their last sync */
  #podServices = new Map<string, Set<string>>()
  /** Service key → the pods its endpoints listed at its last sync (the reverse of #podServices) */
  #servicePods = new Map<string, Set<string>>()

  constructor(clients: { slices: Client; endpoints: Client }, informers: { services: Informer; pods: Informer; slices: Informer; endpoints: Informer }) {
    this.#sliceClient = clients.slices
    this.#endpointsClient = clients.endpoints
    this.#services = informers.services
    this.#pods = informers.pods
    this.#slices = informers.slices
    this.#endpoints = informers.endpoints
    this.#queue = new WorkQueue((key) => this.#sync(key))
    this.#services.on((type, svc) => {
      const key = keyOf(svc)
      if (type === 'DELETED') this.#selectors.delete(key)
      else {
        const selector = obj(obj(svc['spec'])['selector']) as Record<string, string>
        if (Object.keys(selector).length > 0) this.#selectors.set(key, svc.metadata.namespace ?? '', selector)
        else this.#selectors.delete(key)
      }
      this.#queue.add(key)
    })
    this.#pods.on((_type, pod) => {
      const podKey = keyOf(pod)
      for (const key of this.#podServices.get(podKey) ?? []) this.#queue.add(key)
      for (const key of this.#selectors.candidates(pod.metadata.namespace ?? '', pod.metadata.labels)) {
        const svc = this.#services.get(key)
        if (svc && mapSelectorMatches(obj(obj(svc['spec'])['selector']) as Record<string, string>, pod.metadata.labels)) this.#queue.add(key)
      }
    })
    // A slice or Endpoints changed by someone else is put back (the controllers watch their output).
    const owner = (o: KubeObject) => {
      const name = o.metadata.labels?.[serviceNameLabel]
      if (o.metadata.labels?.[sliceManagedBy] === sliceController && name) this.#queue.add(`${o.metadata.namespace ?? ''}/${name}`)
    }
    this.#slices.on((_type, s) => owner(s))
    this.#endpoints.on((type, e) => {
      if (type === 'DELETED' && this.#services.get(keyOf(e))) this.#queue.add(keyOf(e))
    })
  }

  /** Queues every Service (periodic resync). */
  resync(): void {
    for (const svc of this.#services.list()) this.#queue.add(keyOf(svc))
  }

  /** Starts processing (once the caches have listed). */
  run(): void {
    this.#queue.start()
  }

  /** Stops the work queue. */
  async stop(): Promise<void> {
    await this.#queue.shutdown()
  }

  async #sync(key: string): Promise<void> {
    const svc = this.#services.get(key)
    const { namespace, name } = splitKey(key)
    const ns = namespace ?? ''
    const selector = obj(obj(svc?.['spec'])['selector']) as Record<string, string>
    const spec = obj(svc?.['spec'])
    if (!svc || spec['type'] === 'ExternalName' || Object.keys(selector).length === 0) {
      // Gone: its Endpoints go (the Endpoints controller deletes them; its slices are the garbage
      // collector's, through their owner reference). Without a selector: left to whoever manages them.
      if (!svc) {
        const ep = this.#endpoints.get(key)
        if (ep?.metadata.labels?.[endpointsManagedBy] === endpointsController) await this.#delete(this.#endpointsClient, endpoints, ep)
      } else if (spec['type'] === 'ExternalName') {
        for (const s of this.#slices.dependentsOf(svc.metadata.uid ?? '')) await this.#delete(this.#sliceClient, endpointSlices, s)
      }
      this.#forgetPods(key)
      return
    }
    const pods = this.#pods.withLabels(ns, selector).filter((p) => mapSelectorMatches(selector, p.metadata.labels) && !isTerminal(p) && podIP(p) !== '')
    pods.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
    this.#forgetPods(key)
    const listed = new Set<string>()
    for (const p of pods) {
      const podKey = keyOf(p)
      listed.add(podKey)
      let set = this.#podServices.get(podKey)
      if (!set) this.#podServices.set(podKey, (set = new Set()))
      set.add(key)
    }
    if (listed.size > 0) this.#servicePods.set(key, listed)
    const headless = spec['clusterIP'] === 'None' || !spec['clusterIP']
    const labels: Record<string, string> = {}
    for (const [k, v] of Object.entries(svc.metadata.labels ?? {})) if (k !== serviceNameLabel && k !== sliceManagedBy) labels[k] = v
    if (headless) labels[headlessLabel] = ''
    else delete labels[headlessLabel]
    await this.#syncSlices(svc, pods, { ...labels, [serviceNameLabel]: name, [sliceManagedBy]: sliceController })
    const epLabels: Record<string, string> = { ...labels, [endpointsManagedBy]: endpointsController }
    await this.#syncEndpoints(svc, pods, epLabels)
  }

  #forgetPods(serviceKey: string): void {
    for (const podKey of this.#servicePods.get(serviceKey) ?? []) {
      const set = this.#podServices.get(podKey)
      set?.delete(serviceKey)
      if (set?.size === 0) this.#podServices.delete(podKey)
    }
    this.#servicePods.delete(serviceKey)
  }

  /** getEndpointPorts */
  #ports(svc: KubeObject, pod: KubeObject): Port[] {
    const spec = obj(svc['spec'])
    const out: Port[] = []
    for (const sp of arr(spec['ports'])) {
      const port = findPort(pod, sp)
      if (port === undefined) continue
      const p: Port = { name: typeof sp['name'] === 'string' ? sp['name'] : '', port, protocol: String(sp['protocol'] ?? 'TCP') }
      if (typeof sp['appProtocol'] === 'string') p.appProtocol = sp['appProtocol']
      out.push(p)
    }
    return out
  }

  async #syncSlices(svc: KubeObject, pods: KubeObject[], labels: Record<string, string>): Promise<void> {
    const spec = obj(svc['spec'])
    const publishNotReady = spec['publishNotReadyAddresses'] === true
    // Pods grouped by their resolved ports (endpointMeta).
    const groups = new Map<string, { ports: Port[] | null; endpoints: JsonObject[] }>()
    for (const pod of pods) {
      const ports = this.#ports(svc, pod)
      const gk = JSON.stringify(ports)
      let g = groups.get(gk)
      if (!g) groups.set(gk, (g = { ports, endpoints: [] }))
      const serving = isPodReady(pod)
      const terminating = !!pod.metadata.deletionTimestamp
      const ep: JsonObject = {
        addresses: [podIP(pod)],
        conditions: { ready: publishNotReady || (serving && !terminating), serving, terminating },
      }
      const pspec = obj(pod['spec'])
      if (typeof pspec['hostname'] === 'string' && pspec['hostname'] !== '' && pspec['subdomain'] === svc.metadata.name) ep['hostname'] = pspec['hostname']
      ep['targetRef'] = { kind: 'Pod', namespace: pod.metadata.namespace ?? '', name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' }
      if (typeof pspec['nodeName'] === 'string' && pspec['nodeName'] !== '') ep['nodeName'] = pspec['nodeName']
      g.endpoints.push(ep)
    }
    // The placeholder: a Service without endpoints keeps one empty slice.
    if (groups.size === 0) groups.set('null', { ports: null, endpoints: [] })
    const desired: { ports: Port[] | null; endpoints: JsonObject[] | null }[] = []
    for (const g of groups.values()) {
      if (g.endpoints.length === 0) desired.push({ ports: g.ports, endpoints: null })
      for (let i = 0; i < g.endpoints.length; i += maxEndpointsPerSlice) desired.push({ ports: g.ports, endpoints: g.endpoints.slice(i, i + maxEndpointsPerSlice) })
    }
    const uid = svc.metadata.uid ?? ''
    const existing = this.#slices.dependentsOf(uid).filter((s) => s.metadata.labels?.[sliceManagedBy] === sliceController && !s.metadata.deletionTimestamp)
    existing.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
    const unused = new Set(existing)
    const owner = { ...controllerRef(svc), apiVersion: 'v1', kind: 'Service' }
    for (const want of desired) {
      const wantPorts = JSON.stringify(want.ports)
      const reuse = [...unused].find((s) => JSON.stringify(s['ports'] ?? null) === wantPorts) ?? [...unused][0]
      if (reuse) {
        unused.delete(reuse)
        const same = sameJson(reuse['endpoints'] ?? null, want.endpoints) && sameJson(reuse['ports'] ?? null, want.ports) && sameJson(reuse.metadata.labels ?? {}, labels)
        if (same) continue
        const next = { ...reuse, metadata: { ...reuse.metadata, labels, annotations: { ...(reuse.metadata.annotations ?? {}), [triggerTime]: rfc3339() } }, ports: want.ports, endpoints: want.endpoints } as unknown as KubeObject
        try {
          await this.#sliceClient.update(endpointSlices, next)
        } catch (err) {
          if (!isNotFound(err)) throw err
        }
        continue
      }
      // reconciler.go finalize: no new slice for a Service pending deletion, lest it race the collector.
      if (svc.metadata.deletionTimestamp) continue
      const slice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { generateName: `${svc.metadata.name ?? ''}-`, namespace: svc.metadata.namespace, labels, annotations: { [triggerTime]: rfc3339() }, ownerReferences: [owner] },
        addressType: 'IPv4',
        endpoints: want.endpoints,
        ports: want.ports,
      } as unknown as KubeObject
      await this.#sliceClient.create(endpointSlices, svc.metadata.namespace, slice)
    }
    for (const s of unused) await this.#delete(this.#sliceClient, endpointSlices, s)
  }

  async #syncEndpoints(svc: KubeObject, pods: KubeObject[], labels: Record<string, string>): Promise<void> {
    const spec = obj(svc['spec'])
    const publishNotReady = spec['publishNotReadyAddresses'] === true
    const headlessNoPorts = arr(spec['ports']).length === 0 && spec['clusterIP'] === 'None'
    // Addresses grouped by their ports, as RepackSubsets packs them.
    const subsets = new Map<string, { ports: Port[]; addresses: JsonObject[]; notReady: JsonObject[] }>()
    for (const pod of pods) {
      if (pod.metadata.deletionTimestamp && !publishNotReady) continue
      const ports = headlessNoPorts ? [] : this.#ports(svc, pod)
      if (!headlessNoPorts && ports.length === 0) continue
      const address: JsonObject = { ip: podIP(pod) }
      const pspec = obj(pod['spec'])
      if (typeof pspec['hostname'] === 'string' && pspec['hostname'] !== '' && pspec['subdomain'] === svc.metadata.name) address['hostname'] = pspec['hostname']
      if (typeof pspec['nodeName'] === 'string' && pspec['nodeName'] !== '') address['nodeName'] = pspec['nodeName']
      address['targetRef'] = { kind: 'Pod', namespace: pod.metadata.namespace ?? '', name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' }
      const sorted = [...ports].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.port - b.port))
      const gk = JSON.stringify(sorted)
      let g = subsets.get(gk)
      if (!g) subsets.set(gk, (g = { ports: sorted, addresses: [], notReady: [] }))
      if (publishNotReady || isPodReady(pod)) g.addresses.push(address)
      else g.notReady.push(address)
    }
    const byIP = (a: JsonObject, b: JsonObject) => (String(a['ip']) < String(b['ip']) ? -1 : String(a['ip']) > String(b['ip']) ? 1 : 0)
    const out: JsonObject[] = []
    for (const g of subsets.values()) {
      const ss: JsonObject = {}
      if (g.addresses.length > 0) ss['addresses'] = g.addresses.sort(byIP)
      if (g.notReady.length > 0) ss['notReadyAddresses'] = g.notReady.sort(byIP)
      if (g.ports.length > 0) ss['ports'] = g.ports.map((p) => ({ ...(p.name ? { name: p.name } : {}), port: p.port, protocol: p.protocol, ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}) }))
      out.push(ss)
    }
    const current = this.#endpoints.get(keyOf(svc))
    const currentLabels = current?.metadata.labels ?? {}
    if (current && sameJson(current['subsets'] ?? [], out) && sameJson(currentLabels, labels)) return
    const annotations = { ...(current?.metadata.annotations ?? {}), [triggerTime]: rfc3339() }
    const body = { apiVersion: 'v1', kind: 'Endpoints', metadata: { ...(current?.metadata ?? {}), name: svc.metadata.name, namespace: svc.metadata.namespace, labels, annotations }, ...(out.length > 0 ? { subsets: out } : {}) } as unknown as KubeObject
    try {
      if (current) await this.#endpointsClient.update(endpoints, body)
      else await this.#endpointsClient.create(endpoints, svc.metadata.namespace, body)
    } catch (err) {
      // AlreadyExists: the cache is behind; the sync is retried once it has caught up.
      if (!isNotFound(err)) throw err
    }
  }

  async #delete(client: Client, gvr: GVR, o: KubeObject): Promise<void> {
    try {
      await client.delete(gvr, o.metadata.namespace, o.metadata.name ?? '', { uid: o.metadata.uid ?? '' })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }
}
