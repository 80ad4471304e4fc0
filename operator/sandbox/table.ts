/**
 * `meta.k8s.io/v1` Table responses, what `kubectl get` asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: column definitions, one row of cells per
 * object, and the object itself (PartialObjectMetadata by default). Custom resources get Name plus
 * their CRD's printer columns; built-in kinds get the columns kubectl users know (pods READY STATUS
 * RESTARTS AGE, deployments READY UP-TO-DATE AVAILABLE AGE, …).
 */
import type { Json, JsonObject, KubeObject, PrinterColumn, ResourceType } from './types.ts'
import { formatLabelSelector } from '../kube/labels.ts'

interface ColumnDefinition {
  name: string
  type: string
  format: string
  description: string
  priority: number
}

type Cell = string | number | boolean | null

const nameDescription = 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names'
const ageDescription = 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata'

function col(name: string, type = 'string', description = '', priority = 0, format = ''): ColumnDefinition {
  return { name, type, format, description, priority }
}

/**
 * apimachinery's `duration.HumanDuration`: `45s`, `3m12s`, `42m`, `5h3m`, `2d4h`, `400d`, `3y20d`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 120) return `${seconds}s`
  const minutes = Math.trunc(seconds / 60)
  if (minutes < 10) {
    const s = seconds % 60
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`
  }
  if (minutes < 180) return `${minutes}m`
  const hours = Math.trunc(minutes / 60)
  if (hours < 8) {
    const m = minutes % 60
    return m === 0 ? `${hours}h` : `${hours}h${m}m`
  }
  if (hours < 48) return `${hours}h`
  if (hours < 24 * 8) {
    const h = hours % 24
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365
    return dy === 0 ? `${Math.trunc(hours / 24 / 365)}y` : `${Math.trunc(hours / 24 / 365)}y${dy}d`
  }
  return `${Math.trunc(hours / 24 / 365)}y`
}

function age(ts: unknown, at: number): string {
  if (typeof ts !== 'string') return '<unknown>'
  const t = Date.parse(ts)
  return Number.isNaN(t) ? '<invalid>' : humanDuration(at - t)
}

/** A filter step, `[?(@.type=="Ready")]`: the items of a list whose `path` compares to `value`. */
export interface JsonPathFilter {
  path: (string | number)[]
  op: '==' | '!='
  value: string | number | boolean
}

/** One step of a parsed JSONPath. */
export type JsonPathStep = string | number | JsonPathFilter

const STEP = /\.([^.[\]]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]|\[\?\(@((?:\.[^.[\]=!()]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|(-?\d+(?:\.\d+)?|true|false))\s*\)\]/g

/**
 * Parses the JSONPath that printer columns use (client-go's jsonpath, as the API server evaluates
 * them): `.a.b`, `.a[0].b`, `.a['x.y']` and filters such as `.a[?(@.type=="Ready")].reason`,
 * optionally wrapped in `{}`.
 */
export function parseJsonPath(path: string): JsonPathStep[] {
  let p = path.trim()
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1)
  const out: JsonPathStep[] = []
  for (const m of p.matchAll(STEP)) {
    if (m[1] !== undefined) out.push(m[1])
    else if (m[2] !== undefined) out.push(Number(m[2]))
    else if (m[5] !== undefined) {
      const literal = m[9]
      const value = m[7] ?? m[8] ?? (literal === 'true' ? true : literal === 'false' ? false : Number(literal))
      out.push({ path: m[5].split('.').slice(1), op: m[6] as '==' | '!=', value })
    } else out.push(m[3] ?? m[4] ?? '')
  }
  return out
}

/**
 * The value at a parsed JSONPath, or undefined. A filter keeps the matching items; as the API
 * server's table convertor does, the first result is the cell.
 */
export function lookupPath(obj: unknown, path: JsonPathStep[]): unknown {
  let cur: unknown = obj
  for (const [i, seg] of path.entries()) {
    if (cur === null || typeof cur !== 'object') return undefined
    if (typeof seg === 'object') {
      if (!Array.isArray(cur)) return undefined
      for (const item of cur) {
        const v = lookupPath(item, seg.path)
        if (v !== undefined && (v === seg.value) === (seg.op === '==')) {
          const found = lookupPath(item, path.slice(i + 1))
          if (found !== undefined) return found
        }
      }
      return undefined
    }
    if (typeof seg === 'number') {
      if (!Array.isArray(cur)) return undefined
      cur = cur[seg]
    } else {
      if (Array.isArray(cur)) return undefined
      cur = (cur as Record<string, unknown>)[seg]
    }
  }
  return cur
}

/** A printer column's cell as apiextensions' table convertor computes it (cellForJSONValue). */
function customCell(c: PrinterColumn, obj: KubeObject, at: number): Cell {
  const v = lookupPath(obj, parseJsonPath(c.jsonPath))
  if (v === undefined || v === null) return null
  switch (c.type) {
    case 'integer':
      return typeof v === 'number' ? Math.trunc(v) : null
    case 'number':
      return typeof v === 'number' ? v : null
    case 'boolean':
      return typeof v === 'boolean' ? v : null
    case 'date':
      return typeof v === 'string' ? age(v, at) : null
    default:
      return typeof v === 'string' ? v : JSON.stringify(v)
  }
}

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}
function arr(v: unknown): Json[] {
  return Array.isArray(v) ? v : []
}
function num(v: unknown): number {
  return typeof v === 'number' ? v : 0
}
function str(v: unknown, dflt = ''): string {
  return typeof v === 'string' ? v : dflt
}

/** metav1.FormatLabelSelector: `app=x,tier=web`, `<none>` when empty. */
function formatSelector(sel: unknown): string {
  const s = obj(sel)
  const parts: string[] = []
  for (const [k, v] of Object.entries(obj(s['matchLabels'])).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) parts.push(`${k}=${str(v)}`)
  for (const e of arr(s['matchExpressions'])) {
    const x = obj(e)
    const op = str(x['operator'])
    const values = arr(x['values']).map((v) => str(v)).join(',')
    if (op === 'In') parts.push(`${str(x['key'])} in (${values})`)
    else if (op === 'NotIn') parts.push(`${str(x['key'])} notin (${values})`)
    else if (op === 'Exists') parts.push(str(x['key']))
    else parts.push(`!${str(x['key'])}`)
  }
  return parts.length > 0 ? parts.join(',') : '<none>'
}

function containersOf(podSpec: unknown): { names: string; images: string } {
  const cs = arr(obj(podSpec)['containers']).map(obj)
  return { names: cs.map((c) => str(c['name'])).join(','), images: cs.map((c) => str(c['image'])).join(',') }
}

interface Printer {
  columns: ColumnDefinition[]
  cells(o: KubeObject, at: number): Cell[]
}

const wide = (name: string, description = '') => col(name, 'string', description, 1)

function podStatus(o: KubeObject): string {
  const status = obj(o['status'])
  let reason = str(status['reason']) || str(status['phase'], 'Pending')
  for (const cs of arr(status['containerStatuses']).map(obj)) {
    const state = obj(cs['state'])
    const waiting = str(obj(state['waiting'])['reason'])
    const terminated = obj(state['terminated'])
    if (waiting) reason = waiting
    else if (Object.keys(terminated).length > 0) reason = str(terminated['reason']) || `ExitCode:${num(terminated['exitCode'])}`
  }
  if (o.metadata.deletionTimestamp) reason = 'Terminating'
  return reason
}

/** printers.go formatHPAMetrics: at most two metrics, `cpu: <unknown>/80%`, then `+ N more...`. */
function hpaMetrics(specs: Json[], statuses: Json[]): string {
  if (specs.length === 0) return '<none>'
  const list = specs.map((raw, i) => {
    const spec = obj(raw)
    const status = obj(statuses[i])
    const value = (v: unknown) => (v === undefined || v === null ? '<unknown>' : str(v))
    const source = (key: string) => ({ s: obj(spec[key]), c: obj(obj(status[key])['current']), present: status[key] !== undefined && status[key] !== null })
    switch (spec['type']) {
      case 'External':
      case 'Object': {
        const { s, c, present } = source(spec['type'] === 'External' ? 'external' : 'object')
        const target = obj(s['target'])
        if (target['averageValue'] !== undefined && target['averageValue'] !== null) return `${present && c['averageValue'] !== undefined ? str(c['averageValue']) : '<unknown>'}/${str(target['averageValue'])} (avg)`
        return `${present ? value(c['value']) : '<unknown>'}/${value(target['value'])}`
      }
      case 'Pods': {
        const { s, c, present } = source('pods')
        return `${present ? value(c['averageValue']) : '<unknown>'}/${value(obj(s['target'])['averageValue'])}`
      }
      case 'Resource':
      case 'ContainerResource': {
        const { s, c, present } = source(spec['type'] === 'Resource' ? 'resource' : 'containerResource')
        const target = obj(s['target'])
        if (target['averageValue'] !== undefined && target['averageValue'] !== null) return `${str(s['name'])}: ${present ? value(c['averageValue']) : '<unknown>'}/${str(target['averageValue'])}`
        const current = present && typeof c['averageUtilization'] === 'number' ? `${c['averageUtilization']}%` : '<unknown>'
        const wanted = typeof target['averageUtilization'] === 'number' ? `${target['averageUtilization']}%` : '<auto>'
        return `${str(s['name'])}: ${current}/${wanted}`
      }
      default:
        return '<unknown type>'
    }
  })
  return list.length > 2 ? `${list.slice(0, 2).join(', ')} + ${list.length - 2} more...` : list.join(', ')
}

const rolePrinter: Printer = {
  columns: [col('Created At', 'date', ageDescription)],
  cells: (o) => [str(o.metadata.creationTimestamp, '<unknown>')],
}

// rbac.SubjectsStrings: users, groups, and ServiceAccounts as `namespace:name`.
const bindingPrinter: Printer = {
  columns: [col('Role', 'string', 'RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.'), col('Age', 'string', ageDescription), wide('Users', 'Users in the roleBinding'), wide('Groups', 'Groups in the roleBinding'), wide('ServiceAccounts', 'ServiceAccounts in the roleBinding')],
  cells(o, at) {
    const ref = obj(o['roleRef'])
    const subjects = arr(o['subjects']).map(obj)
    const of = (kind: string) => subjects.filter((x) => x['kind'] === kind)
    const sas = of('ServiceAccount').map((x) => `${str(x['namespace'])}:${str(x['name'])}`)
    return [`${str(ref['kind'])}/${str(ref['name'])}`, age(o.metadata.creationTimestamp, at), of('User').map((x) => str(x['name'])).join(', '), of('Group').map((x) => str(x['name'])).join(', '), sas.join(', ')]
  },
}

const builtinPrinters: Record<string, Printer> = {
  '/pods': {
    columns: [col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'), col('Status', 'string', 'The aggregate status of the containers in this pod.'), col('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'), col('Age', 'string', ageDescription), wide('IP', 'The IP address assigned to the pod'), wide('Node', 'The name of the node assigned to this pod'), wide('Nominated Node', 'The node that this pod is nominated to run on'), wide('Readiness Gates', 'The readiness gates of this pod')],
    cells(o, at) {
      const status = obj(o['status'])
      const total = arr(obj(o['spec'])['containers']).length
      const statuses = arr(status['containerStatuses']).map(obj)
      const ready = statuses.filter((c) => c['ready'] === true).length
      const restarts = statuses.reduce((n, c) => n + num(c['restartCount']), 0)
      return [`${ready}/${total}`, podStatus(o), String(restarts), age(o.metadata.creationTimestamp, at), str(status['podIP'], '<none>'), str(obj(o['spec'])['nodeName'], '<none>'), str(status['nominatedNodeName'], '<none>'), '<none>']
    },
  },
  'apps/deployments': {
    columns: [col('Ready', 'string', 'Number of the pod with ready state'), col('Up-to-date', 'integer', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.'), col('Available', 'integer', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.'), col('Age', 'string', ageDescription), wide('Containers', 'Names of each container in the template.'), wide('Images', 'Images referenced by each container in the template.'), wide('Selector', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.')],
    cells(o, at) {
      const spec = obj(o['spec'])
      const status = obj(o['status'])
      const c = containersOf(obj(spec['template'])['spec'])
      const desired = typeof spec['replicas'] === 'number' ? spec['replicas'] : 1
      return [`${num(status['readyReplicas'])}/${desired}`, num(status['updatedReplicas']), num(status['availableReplicas']), age(o.metadata.creationTimestamp, at), c.names, c.images, formatSelector(spec['selector'])]
    },
  },
  'apps/replicasets': {
    columns: [col('Desired', 'integer', 'Number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1.'), col('Current', 'integer', 'Replicas is the most recently observed number of replicas.'), col('Ready', 'integer', 'The number of ready replicas for this replica set.'), col('Age', 'string', ageDescription), wide('Containers', 'Names of each container in the template.'), wide('Images', 'Images referenced by each container in the template.'), wide('Selector', 'Selector is a label query over pods that should match the replica count.')],
    cells(o, at) {
      const spec = obj(o['spec'])
      const status = obj(o['status'])
      const c = containersOf(obj(spec['template'])['spec'])
      return [typeof spec['replicas'] === 'number' ? spec['replicas'] : 1, num(status['replicas']), num(status['readyReplicas']), age(o.metadata.creationTimestamp, at), c.names, c.images, formatSelector(spec['selector'])]
    },
  },
  'apps/statefulsets': {
    columns: [col('Ready', 'string', 'Number of the pod with ready state'), col('Age', 'string', ageDescription), wide('Containers', 'Names of each container in the template.'), wide('Images', 'Images referenced by each container in the template.')],
    cells(o, at) {
      const spec = obj(o['spec'])
      const c = containersOf(obj(spec['template'])['spec'])
      return [`${num(obj(o['status'])['readyReplicas'])}/${typeof spec['replicas'] === 'number' ? spec['replicas'] : 1}`, age(o.metadata.creationTimestamp, at), c.names, c.images]
    },
  },
  // pkg/printers/internalversion/printers.go printControllerRevision: the controller as `statefulset.apps/web`.
  'apps/controllerrevisions': {
    columns: [col('Controller', 'string', 'Controller of the object'), col('Revision', 'integer', 'Revision indicates the revision of the state represented by Data.'), col('Age', 'string', ageDescription)],
    cells(o, at) {
      const ref = o.metadata.ownerReferences?.find((r) => r.controller === true)
      let controller = '<none>'
      if (ref) {
        const i = ref.apiVersion.indexOf('/')
        const group = i < 0 ? '' : ref.apiVersion.slice(0, i)
        controller = `${(group ? `${ref.kind}.${group}` : ref.kind).toLowerCase()}/${ref.name}`
      }
      return [controller, num(o['revision']), age(o.metadata.creationTimestamp, at)]
    },
  },
  // printers.go printHorizontalPodAutoscaler and formatHPAMetrics.
  'autoscaling/horizontalpodautoscalers': {
    columns: [col('Reference', 'string', 'scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.'), col('Targets', 'string', 'metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.'), col('MinPods', 'string', 'minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.'), col('MaxPods', 'integer', 'maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.'), col('Replicas', 'integer', 'currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.'), col('Age', 'string', ageDescription)],
    cells(o, at) {
      const spec = obj(o['spec'])
      const ref = obj(spec['scaleTargetRef'])
      const status = obj(o['status'])
      return [`${str(ref['kind'])}/${str(ref['name'])}`, hpaMetrics(arr(spec['metrics']), arr(status['currentMetrics'])), typeof spec['minReplicas'] === 'number' ? String(spec['minReplicas']) : '<unset>', num(spec['maxReplicas']), num(status['currentReplicas']), age(o.metadata.creationTimestamp, at)]
    },
  },
  '/resourcequotas': {
    columns: [col('Age', 'string', ageDescription), col('Request', 'string', 'Request represents a minimum amount of cpu/memory that a container may consume.'), col('Limit', 'string', 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.')],
    cells(o, at) {
      const status = obj(o['status'])
      const hard = obj(status['hard'])
      const used = obj(status['used'])
      const show = (limits: boolean): string =>
        Object.keys(hard).filter((k) => k.startsWith('limits.') === limits).sort().map((k) => `${k}: ${str(used[k], '0')}/${str(hard[k])}`).join(', ')
      return [age(o.metadata.creationTimestamp, at), show(false), show(true)]
    },
  },
  '/services': {
    columns: [col('Type', 'string', 'type determines how the Service is exposed.'), col('Cluster-IP', 'string', 'clusterIP is the IP address of the service.'), col('External-IP', 'string', 'List of IP addresses for which nodes in the cluster will also accept traffic for this service.'), col('Port(s)', 'string', 'The list of ports that are exposed by this service.'), col('Age', 'string', ageDescription), wide('Selector', 'Route service traffic to pods with label keys and values matching this selector.')],
    cells(o, at) {
      const spec = obj(o['spec'])
      const ports = arr(spec['ports']).map(obj).map((p) => `${num(p['port'])}${p['nodePort'] ? `:${num(p['nodePort'])}` : ''}/${str(p['protocol'], 'TCP')}`)
      const sel = Object.entries(obj(spec['selector'])).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${str(v)}`)
      const external = arr(spec['externalIPs']).map((v) => str(v))
      return [str(spec['type'], 'ClusterIP'), str(spec['clusterIP'], '<none>'), external.length > 0 ? external.join(',') : '<none>', ports.length > 0 ? ports.join(',') : '<none>', age(o.metadata.creationTimestamp, at), sel.length > 0 ? sel.join(',') : '<none>']
    },
  },
  '/namespaces': {
    columns: [col('Status', 'string', 'The status of the namespace'), col('Age', 'string', ageDescription)],
    cells: (o, at) => [str(obj(o['status'])['phase'], 'Active'), age(o.metadata.creationTimestamp, at)],
  },
  '/configmaps': {
    columns: [col('Data', 'integer', 'Data contains the configuration data.'), col('Age', 'string', ageDescription)],
    cells: (o, at) => [Object.keys(obj(o['data'])).length + Object.keys(obj(o['binaryData'])).length, age(o.metadata.creationTimestamp, at)],
  },
  '/secrets': {
    columns: [col('Type', 'string', 'Used to facilitate programmatic handling of secret data.'), col('Data', 'integer', 'Data contains the secret data.'), col('Age', 'string', ageDescription)],
    cells: (o, at) => [str(o['type'], 'Opaque'), Object.keys(obj(o['data'])).length, age(o.metadata.creationTimestamp, at)],
  },
  '/serviceaccounts': {
    columns: [col('Secrets', 'string', 'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.'), col('Age', 'string', ageDescription)],
    cells: (o, at) => [String(arr(o['secrets']).length), age(o.metadata.creationTimestamp, at)],
  },
  // printers.go printEndpoints / formatEndpoints: ip:port for each port, 3 shown then "+ N more...".
  '/endpoints': {
    columns: [col('Endpoints', 'string', 'Endpoints of this resource'), col('Age', 'string', ageDescription)],
    cells(o, at) {
      const subsets = arr(o['subsets']).map(obj)
      if (subsets.length === 0) return ['<none>', age(o.metadata.creationTimestamp, at)]
      const list: string[] = []
      let count = 0
      for (const ss of subsets) {
        const ips = arr(ss['addresses']).map((a) => str(obj(a)['ip']))
        const ports = arr(ss['ports']).map(obj)
        if (ports.length === 0) {
          count += ips.length
          for (const ip of ips) if (list.length < 3) list.push(ip)
          continue
        }
        for (const p of ports) {
          count += ips.length
          for (const ip of ips) if (list.length < 3) list.push(`${ip.includes(':') ? `[${ip}]` : ip}:${num(p['port'])}`)
        }
      }
      return [count > 3 ? `${list.join(',')} + ${count - 3} more...` : list.join(','), age(o.metadata.creationTimestamp, at)]
    },
  },
  // printers.go printEndpointSlice, formatDiscoveryPorts, formatDiscoveryEndpoints, listWithMoreString.
  'discovery.k8s.io/endpointslices': {
    columns: [col('AddressType', 'string', 'addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType "IPv4" and "IPv6". No semantics are defined for the "FQDN" type.'), col('Ports', 'string', 'ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.'), col('Endpoints', 'string', 'endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.'), col('Age', 'string', ageDescription)],
    cells(o, at) {
      const more = (list: string[], count: number) => (count > 3 ? `${list.slice(0, 3).join(',')} + ${count - 3} more...` : list.join(',') || '<unset>')
      const ports = arr(o['ports']).map(obj).map((p) => (typeof p['port'] === 'number' ? String(p['port']) : typeof p['name'] === 'string' ? p['name'] : '*'))
      const addresses = arr(o['endpoints']).flatMap((e) => arr(obj(e)['addresses']).map((a) => str(a)))
      return [str(o['addressType']), more(ports, ports.length), more(addresses, addresses.length), age(o.metadata.creationTimestamp, at)]
    },
  },
  'policy/poddisruptionbudgets': {
    columns: [col('Min Available', 'string', 'The minimum number of pods that must be available simultaneously.'), col('Max Unavailable', 'string', 'The maximum number of pods that may be unavailable simultaneously.'), col('Allowed Disruptions', 'integer', 'Calculated number of pods that may be disrupted at this time.'), col('Age', 'string', ageDescription)],
    cells(o, at) {
      const spec = obj(o['spec'])
      const show = (v: unknown) => (v === undefined || v === null ? 'N/A' : String(v))
      return [show(spec['minAvailable']), show(spec['maxUnavailable']), num(obj(o['status'])['disruptionsAllowed']), age(o.metadata.creationTimestamp, at)]
    },
  },
  // printers.go printNetworkPolicy: the pod selector as metav1.FormatLabelSelector writes it.
  'networking.k8s.io/networkpolicies': {
    columns: [col('Pod-Selector', 'string', "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector."), col('Age', 'string', ageDescription)],
    cells: (o, at) => [formatLabelSelector(obj(o['spec'])['podSelector']) || '<none>', age(o.metadata.creationTimestamp, at)],
  },
  'coordination.k8s.io/leases': {
    columns: [col('Holder', 'string', 'The holder of the lease.'), col('Age', 'string', ageDescription)],
    cells: (o, at) => [str(obj(o['spec'])['holderIdentity']), age(o.metadata.creationTimestamp, at)],
  },
  'rbac.authorization.k8s.io/roles': rolePrinter,
  'rbac.authorization.k8s.io/clusterroles': rolePrinter,
  'rbac.authorization.k8s.io/rolebindings': bindingPrinter,
  'rbac.authorization.k8s.io/clusterrolebindings': bindingPrinter,
  'apiextensions.k8s.io/customresourcedefinitions': {
    columns: [col('Created At', 'date', ageDescription)],
    cells: (o) => [str(o.metadata.creationTimestamp, '<unknown>')],
  },
}

const eventPrinter: { columns: ColumnDefinition[]; cells(o: KubeObject, at: number): Cell[] } = {
  columns: [col('Last Seen', 'string', 'Time when last event occurred'), col('Type', 'string', 'Type of event'), col('Reason', 'string', 'Reason of event'), col('Object', 'string', 'Object the event is about'), col('Message', 'string', 'Message of event')],
  cells(o, at) {
    const regarding = obj(o['involvedObject'] ?? o['regarding'])
    const last = o['lastTimestamp'] ?? o['eventTime'] ?? o['deprecatedLastTimestamp'] ?? o.metadata.creationTimestamp
    return [age(last, at), str(o['type']), str(o['reason']), `${str(regarding['kind']).toLowerCase()}/${str(regarding['name'])}`, str(o['message'] ?? o['note'])]
  },
}

/**
 * Builds the Table for `objects` of `type`. Rows follow the objects' order; `includeObject`
 * chooses what each row carries (`Metadata`, the default, is a PartialObjectMetadata). Ages are
 * measured at `at` (epoch ms), one reading for the whole table so that rows agree; callers that
 * need reproducible ages pass their own.
 */
export function toTable(type: ResourceType, objects: KubeObject[], listMeta: { resourceVersion: string; continue?: string }, includeObject: 'None' | 'Metadata' | 'Object', at: number = Date.now()): JsonObject {
  let columns: ColumnDefinition[]
  let cellsOf: (o: KubeObject) => Cell[]
  const builtin = type.custom ? undefined : type.resource === 'events' ? eventPrinter : builtinPrinters[`${type.group}/${type.resource}`]
  if (type.custom || !builtin) {
    const printer = type.printerColumns ?? (type.custom ? [] : [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: ageDescription }])
    columns = printer.map((c) => col(c.name, c.type, c.description ?? '', c.priority ?? 0, c.format ?? ''))
    cellsOf = (o) => printer.map((c) => customCell(c, o, at))
  } else {
    columns = builtin.columns
    cellsOf = (o) => builtin.cells(o, at)
  }
  const events = type.resource === 'events' && !type.custom
  const columnDefinitions = events ? columns : [col('Name', 'string', nameDescription, 0, 'name'), ...columns]
  const rows = objects.map((o) => {
    const cells = events ? cellsOf(o) : [o.metadata.name ?? '', ...cellsOf(o)]
    const row: JsonObject = { cells }
    if (includeObject === 'Object') row['object'] = o as unknown as Json
    else if (includeObject === 'Metadata') row['object'] = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata as unknown as Json }
    return row
  })
  const metadata: JsonObject = { resourceVersion: listMeta.resourceVersion }
  if (listMeta.continue) metadata['continue'] = listMeta.continue
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata, columnDefinitions: columnDefinitions as unknown as Json, rows }
}
