/**
 * Server-side defaulting of the built-in kinds the sandbox serves (k8s.io/kubernetes
 * `pkg/apis/<group>/v1/defaults.go`), so that a live object carries what a real one carries and a
 * reconciler that compares naively is caught here. Quantities in container resources are
 * re-emitted in canonical form. int-or-string fields keep their JSON type.
 */
import { defaultRbac } from './rbac.ts'
import type { Json, JsonObject, KubeObject } from '../object.ts'
import { defaultNetworkPolicy } from './networkpolicy.ts'
import { canonicalQuantity } from '../quantity.ts'

/** Hooks for defaults that need server state. */
export interface DefaultingHooks {
  /**
   * Allocates a ClusterIP for a Service that has none (not for headless `None` nor ExternalName).
   * Without it, `clusterIP`/`clusterIPs` are left to the caller.
   */
  allocateClusterIP?: () => string
}

function isObj(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function obj(parent: JsonObject, key: string): JsonObject {
  const v = parent[key]
  if (isObj(v)) return v
  const o: JsonObject = {}
  parent[key] = o
  return o
}

function setDefault(o: JsonObject, key: string, value: Json): void {
  if (o[key] === undefined || o[key] === null || o[key] === '') o[key] = value
}

/** Defaults a built-in object in place, chosen by apiVersion and kind; other kinds are left alone. */
export function defaultBuiltin(object: KubeObject, hooks: DefaultingHooks = {}): void {
  const o = object as unknown as JsonObject
  switch (`${object.apiVersion}/${object.kind}`) {
    case 'apps/v1/Deployment':
      defaultDeployment(o)
      break
    case 'apps/v1/ReplicaSet':
      defaultReplicated(o)
      break
    case 'apps/v1/StatefulSet':
      defaultStatefulSet(o)
      break
    case 'v1/Pod':
      defaultPodSpec(obj(o, 'spec'))
      break
    case 'v1/PodTemplate':
      defaultPodTemplate(o, 'template')
      break
    case 'v1/Service':
      defaultService(o, hooks)
      break
    case 'v1/Secret':
      setDefault(o, 'type', 'Opaque')
      break
    case 'rbac.authorization.k8s.io/v1/RoleBinding':
    case 'rbac.authorization.k8s.io/v1/ClusterRoleBinding':
      defaultRbac(object)
      break
    case 'v1/Namespace':
      defaultNamespace(o)
      break
    case 'autoscaling/v2/HorizontalPodAutoscaler':
      defaultHorizontalPodAutoscaler(o)
      break
    case 'networking.k8s.io/v1/NetworkPolicy':
      defaultNetworkPolicy(o)
      break
    default:
      break
  }
}

function defaultReplicated(o: JsonObject): JsonObject {
  const spec = obj(o, 'spec')
  setDefault(spec, 'replicas', 1)
  defaultPodTemplate(spec, 'template')
  return spec
}

function defaultDeployment(o: JsonObject): void {
  const spec = defaultReplicated(o)
  const strategy = obj(spec, 'strategy')
  setDefault(strategy, 'type', 'RollingUpdate')
  if (strategy.type === 'RollingUpdate') {
    const ru = obj(strategy, 'rollingUpdate')
    setDefault(ru, 'maxUnavailable', '25%')
    setDefault(ru, 'maxSurge', '25%')
  }
  setDefault(spec, 'revisionHistoryLimit', 10)
  setDefault(spec, 'progressDeadlineSeconds', 600)
}

/** apps/v1 SetDefaults_StatefulSet, and the PersistentVolumeClaim defaults of its claim templates. */
function defaultStatefulSet(o: JsonObject): void {
  const spec = defaultReplicated(o)
  setDefault(spec, 'podManagementPolicy', 'OrderedReady')
  const strategy = obj(spec, 'updateStrategy')
  if (strategy.type === undefined || strategy.type === null || strategy.type === '') {
    strategy.type = 'RollingUpdate'
    if (!isObj(strategy.rollingUpdate)) strategy.rollingUpdate = {}
  }
  if (strategy.type === 'RollingUpdate' && isObj(strategy.rollingUpdate)) setDefault(strategy.rollingUpdate, 'partition', 0)
  setDefault(spec, 'revisionHistoryLimit', 10)
  const retention = obj(spec, 'persistentVolumeClaimRetentionPolicy')
  setDefault(retention, 'whenDeleted', 'Retain')
  setDefault(retention, 'whenScaled', 'Retain')
  const claims = spec.volumeClaimTemplates
  if (Array.isArray(claims)) {
    for (const c of claims) {
      if (!isObj(c)) continue
      setDefault(c, 'apiVersion', 'v1')
      setDefault(c, 'kind', 'PersistentVolumeClaim')
      setDefault(obj(c, 'spec'), 'volumeMode', 'Filesystem')
      setDefault(obj(c, 'status'), 'phase', 'Pending')
    }
  }
}

/**
 * autoscaling/v2 SetDefaults_HorizontalPodAutoscaler (pkg/apis/autoscaling/v2/defaults.go):
 * minReplicas 1, CPU at 80% average utilization when no metric is given, and a `behavior` that is
 * present gets every unset rule filled from the default scale-up and scale-down rules.
 */
function defaultHorizontalPodAutoscaler(o: JsonObject): void {
  const spec = obj(o, 'spec')
  if (typeof spec.minReplicas !== 'number') spec.minReplicas = 1
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0) {
    spec.metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }]
  }
  if (!isObj(spec.behavior)) return
  const rules = (key: string, dflt: JsonObject): void => {
    const from = isObj(spec.behavior) && isObj((spec.behavior as JsonObject)[key]) ? ((spec.behavior as JsonObject)[key] as JsonObject) : {}
    const to: JsonObject = structuredClone(dflt)
    for (const k of ['selectPolicy', 'stabilizationWindowSeconds', 'policies', 'tolerance']) if (from[k] !== undefined && from[k] !== null) to[k] = from[k] as Json
    ;(spec.behavior as JsonObject)[key] = to
  }
  rules('scaleUp', { stabilizationWindowSeconds: 0, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }] })
  rules('scaleDown', { selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] })
}

function defaultPodTemplate(parent: JsonObject, key: string): void {
  const template = obj(parent, key)
  defaultPodSpec(obj(template, 'spec'))
}

/** PodSpec defaults (pods and pod templates). */
export function defaultPodSpec(spec: JsonObject): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst')
  setDefault(spec, 'restartPolicy', 'Always')
  if (!isObj(spec.securityContext)) spec.securityContext = {}
  setDefault(spec, 'terminationGracePeriodSeconds', 30)
  setDefault(spec, 'schedulerName', 'default-scheduler')
  for (const key of ['containers', 'initContainers']) {
    const list = spec[key]
    if (Array.isArray(list)) for (const c of list) if (isObj(c)) defaultContainer(c)
  }
  const volumes = spec.volumes
  if (Array.isArray(volumes)) for (const v of volumes) if (isObj(v)) defaultVolume(v)
}

function defaultVolume(v: JsonObject): void {
  for (const key of ['configMap', 'secret']) {
    const src = v[key]
    if (isObj(src)) setDefault(src, 'defaultMode', 420)
  }
}

/** `Always` for `:latest` or no tag, else `IfNotPresent` (digests count as pinned). */
export function defaultPullPolicy(image: unknown): 'Always' | 'IfNotPresent' {
  if (typeof image !== 'string') return 'IfNotPresent'
  if (image.includes('@')) return 'IfNotPresent'
  const lastSlash = image.lastIndexOf('/')
  const colon = image.lastIndexOf(':')
  const tag = colon > lastSlash ? image.slice(colon + 1) : ''
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent'
}

function defaultContainer(c: JsonObject): void {
  setDefault(c, 'imagePullPolicy', defaultPullPolicy(c.image))
  setDefault(c, 'terminationMessagePath', '/dev/termination-log')
  setDefault(c, 'terminationMessagePolicy', 'File')
  const ports = c.ports
  if (Array.isArray(ports)) for (const p of ports) if (isObj(p)) setDefault(p, 'protocol', 'TCP')
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const probe = c[key]
    if (isObj(probe)) defaultProbe(probe)
  }
  const env = c.env
  if (Array.isArray(env)) {
    for (const e of env) {
      const fieldRef = isObj(e) && isObj(e.valueFrom) ? e.valueFrom.fieldRef : undefined
      if (isObj(fieldRef)) setDefault(fieldRef, 'apiVersion', 'v1')
    }
  }
  const resources = obj(c, 'resources')
  for (const key of ['limits', 'requests']) {
    const m = resources[key]
    if (!isObj(m)) continue
    for (const [name, q] of Object.entries(m)) {
      if (typeof q === 'string' || typeof q === 'number') {
        // An invalid quantity is left for validation to report.
        try {
          m[name] = canonicalQuantity(q)
        } catch {
          /* validation's job */
        }
      }
    }
  }
}

function defaultProbe(p: JsonObject): void {
  setDefault(p, 'timeoutSeconds', 1)
  setDefault(p, 'periodSeconds', 10)
  setDefault(p, 'successThreshold', 1)
  setDefault(p, 'failureThreshold', 3)
  const http = p.httpGet
  if (isObj(http)) {
    setDefault(http, 'path', '/')
    setDefault(http, 'scheme', 'HTTP')
  }
}

function defaultService(o: JsonObject, hooks: DefaultingHooks): void {
  const spec = obj(o, 'spec')
  setDefault(spec, 'type', 'ClusterIP')
  setDefault(spec, 'sessionAffinity', 'None')
  if (spec.sessionAffinity === 'ClientIP') {
    const clientIP = obj(obj(spec, 'sessionAffinityConfig'), 'clientIP')
    setDefault(clientIP, 'timeoutSeconds', 10800)
  }
  if (spec.type === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true)
  const ports = spec.ports
  if (Array.isArray(ports)) {
    for (const p of ports) {
      if (!isObj(p)) continue
      setDefault(p, 'protocol', 'TCP')
      const unset = p.targetPort === undefined || p.targetPort === null || p.targetPort === 0 || p.targetPort === ''
      if (unset && p.port !== undefined) p.targetPort = p.port
    }
  }
  if (spec.type === 'ExternalName') return
  setDefault(spec, 'internalTrafficPolicy', 'Cluster')
  if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') setDefault(spec, 'externalTrafficPolicy', 'Cluster')
  if (spec.clusterIP === 'None') {
    if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = ['None']
  } else if ((spec.clusterIP === undefined || spec.clusterIP === '') && hooks.allocateClusterIP !== undefined) {
    const ip = hooks.allocateClusterIP()
    spec.clusterIP = ip
    spec.clusterIPs = [ip]
  } else if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '' && !Array.isArray(spec.clusterIPs)) {
    spec.clusterIPs = [spec.clusterIP]
  }
  setDefault(spec, 'ipFamilyPolicy', 'SingleStack')
  if (!Array.isArray(spec.ipFamilies) || spec.ipFamilies.length === 0) spec.ipFamilies = ['IPv4']
  const status = obj(o, 'status')
  if (!isObj(status.loadBalancer)) status.loadBalancer = {}
}

// spec.finalizers ['kubernetes'] is set by the namespace strategy on create, not by defaulting: a
// default here would re-add it when the namespace controller removes it during deletion.
function defaultNamespace(o: JsonObject): void {
  const status = obj(o, 'status')
  setDefault(status, 'phase', 'Active')
}
