/**
 * Server-side apply topologies of the built-in kinds the sandbox serves, after the reference's
 * list/map table (k8s.io/api's `+listType`, `+listMapKey`, `patchMergeKey`, `+structType=atomic`,
 * `+mapType=atomic` markers). Only what differs from the default needs declaring: an unnamed struct
 * field merges field by field and its lists are atomic (see `OPEN` in walk.ts).
 */
import type { Json, Topology } from '../types.ts'
import { ANY, type ImplicitFlag, OPEN, SCALAR } from './walk.ts'

type Fields = Record<string, Topology>

function struct(fields: Fields, implicit = false): Topology {
  const t: Topology & ImplicitFlag = { type: 'struct', fields }
  if (implicit) t.implicit = true
  return t
}
/** A struct that a Go zero value always carries (non-pointer field). */
function implicitStruct(fields: Fields): Topology {
  return struct(fields, true)
}
function implicitList(t: Topology): Topology {
  ;(t as Topology & ImplicitFlag).implicit = true
  return t
}
const ATOMIC_STRUCT: Topology = { type: 'struct', fields: {}, atomic: true }
const ATOMIC_LIST: Topology = { type: 'list', items: ANY, listType: 'atomic' }
const STRING_SET: Topology = { type: 'list', items: SCALAR, listType: 'set' }
const STRING_MAP: Topology = { type: 'map', values: SCALAR }
const ATOMIC_MAP: Topology = { type: 'map', values: SCALAR, atomic: true }

function mapList(keys: string[], items: Topology = OPEN, keyDefaults?: Record<string, Json>): Topology {
  const t: Topology = { type: 'list', items, listType: 'map', keys }
  if (keyDefaults !== undefined) t.keyDefaults = keyDefaults
  return t
}

const CONDITIONS = mapList(['type'])

/** ObjectMeta: labels/annotations granular, finalizers a set, ownerReferences keyed by uid with atomic items. */
export const METADATA: Topology = implicitStruct({
  labels: STRING_MAP,
  annotations: STRING_MAP,
  finalizers: STRING_SET,
  ownerReferences: mapList(['uid'], ATOMIC_STRUCT),
  managedFields: ATOMIC_LIST,
})

const PROBE = struct({
  exec: struct({ command: ATOMIC_LIST }),
  httpGet: struct({ httpHeaders: ATOMIC_LIST }),
})

const CONTAINER = struct({
  command: ATOMIC_LIST,
  args: ATOMIC_LIST,
  ports: mapList(['containerPort', 'protocol'], OPEN, { protocol: 'TCP' }),
  env: mapList(['name'], struct({ valueFrom: struct({}) })),
  envFrom: ATOMIC_LIST,
  volumeMounts: mapList(['mountPath']),
  volumeDevices: mapList(['devicePath']),
  resources: implicitStruct({ limits: STRING_MAP, requests: STRING_MAP, claims: mapList(['name']) }),
  resizePolicy: ATOMIC_LIST,
  livenessProbe: PROBE,
  readinessProbe: PROBE,
  startupProbe: PROBE,
  securityContext: struct({ capabilities: struct({ add: ATOMIC_LIST, drop: ATOMIC_LIST }) }),
})

const LABEL_SELECTOR = ATOMIC_STRUCT

/** PodSpec. */
export const POD_SPEC: Topology = struct({
  // `containers` has no omitempty: a Go zero PodSpec carries `containers: null`.
  containers: implicitList(mapList(['name'], CONTAINER)),
  initContainers: mapList(['name'], CONTAINER),
  ephemeralContainers: mapList(['name'], CONTAINER),
  volumes: mapList(['name']),
  imagePullSecrets: mapList(['name']),
  tolerations: ATOMIC_LIST,
  topologySpreadConstraints: mapList(['topologyKey', 'whenUnsatisfiable'], struct({ labelSelector: LABEL_SELECTOR, matchLabelKeys: ATOMIC_LIST })),
  nodeSelector: ATOMIC_MAP,
  hostAliases: mapList(['ip']),
  readinessGates: ATOMIC_LIST,
  resourceClaims: mapList(['name']),
  schedulingGates: mapList(['name']),
  affinity: struct({ nodeAffinity: struct({ requiredDuringSchedulingIgnoredDuringExecution: ATOMIC_STRUCT }) }),
  securityContext: struct({ supplementalGroups: ATOMIC_LIST, sysctls: ATOMIC_LIST }),
  overhead: STRING_MAP,
}, true)

/** PodTemplateSpec (inside Deployments, ReplicaSets, …). */
export const POD_TEMPLATE_SPEC: Topology = implicitStruct({ metadata: METADATA, spec: POD_SPEC })

function object(fields: Fields): Topology {
  const t: Topology & ImplicitFlag = { type: 'struct', fields: { apiVersion: SCALAR, kind: SCALAR, metadata: METADATA, ...fields }, implicit: true, goTyped: true }
  return t
}

const WORKLOAD_STATUS = implicitStruct({ conditions: CONDITIONS })

const DEPLOYMENT = object({
  spec: implicitStruct({
    selector: LABEL_SELECTOR,
    template: POD_TEMPLATE_SPEC,
    strategy: implicitStruct({ rollingUpdate: struct({}) }),
  }),
  status: WORKLOAD_STATUS,
})

const REPLICA_SET = object({
  spec: implicitStruct({ selector: LABEL_SELECTOR, template: POD_TEMPLATE_SPEC }),
  status: WORKLOAD_STATUS,
})

const STATEFUL_SET = object({
  spec: implicitStruct({
    selector: LABEL_SELECTOR,
    template: POD_TEMPLATE_SPEC,
    volumeClaimTemplates: ATOMIC_LIST,
    updateStrategy: implicitStruct({ rollingUpdate: struct({}) }),
    persistentVolumeClaimRetentionPolicy: struct({}),
    ordinals: struct({}),
  }),
  status: WORKLOAD_STATUS,
})

const RESOURCE_QUOTA = object({
  spec: implicitStruct({ hard: STRING_MAP, scopes: ATOMIC_LIST, scopeSelector: struct({ matchExpressions: ATOMIC_LIST }) }),
  status: implicitStruct({ hard: STRING_MAP, used: STRING_MAP }),
})

const POD = object({
  spec: POD_SPEC,
  status: implicitStruct({
    conditions: CONDITIONS,
    podIPs: mapList(['ip']),
    hostIPs: mapList(['ip']),
    containerStatuses: ATOMIC_LIST,
    initContainerStatuses: ATOMIC_LIST,
  }),
})

const SERVICE = object({
  spec: implicitStruct({
    ports: mapList(['port', 'protocol'], OPEN, { protocol: 'TCP' }),
    selector: ATOMIC_MAP,
    clusterIPs: ATOMIC_LIST,
    ipFamilies: ATOMIC_LIST,
    externalIPs: ATOMIC_LIST,
    loadBalancerSourceRanges: ATOMIC_LIST,
  }),
  status: implicitStruct({ loadBalancer: implicitStruct({ ingress: ATOMIC_LIST }), conditions: CONDITIONS }),
})

const PDB = object({
  spec: implicitStruct({ selector: LABEL_SELECTOR }),
  status: implicitStruct({ conditions: CONDITIONS, disruptedPods: STRING_MAP }),
})

const CONFIG_MAP = object({ data: STRING_MAP, binaryData: STRING_MAP })
const SECRET = object({ data: STRING_MAP, stringData: STRING_MAP })
const SERVICE_ACCOUNT = object({ secrets: mapList(['name']), imagePullSecrets: ATOMIC_LIST })
const NAMESPACE = object({ spec: implicitStruct({ finalizers: ATOMIC_LIST }), status: implicitStruct({ conditions: CONDITIONS }) })
const CORE_EVENT = object({ involvedObject: implicitStruct({}), source: implicitStruct({}) })
const EVENTS_EVENT = object({ regarding: implicitStruct({}) })
const LEASE = object({ spec: implicitStruct({}) })
// The CRD body matters to apply only as a whole: versions (with their schemas) are atomic.
const CRD = object({
  spec: implicitStruct({ names: implicitStruct({ shortNames: ATOMIC_LIST, categories: ATOMIC_LIST }), versions: ATOMIC_LIST }),
  status: implicitStruct({ conditions: CONDITIONS, acceptedNames: implicitStruct({}), storedVersions: ATOMIC_LIST }),
})
// k8s.io/api rbac/v1: rules, subjects and aggregation selectors are `+listType=atomic`.
const ROLE = object({ rules: ATOMIC_LIST })
const CLUSTER_ROLE = object({ rules: ATOMIC_LIST, aggregationRule: struct({ clusterRoleSelectors: ATOMIC_LIST }) })
const ROLE_BINDING = object({ subjects: ATOMIC_LIST, roleRef: implicitStruct({}) })
// k8s.io/api autoscaling/v2: metrics, policies and current metrics are `+listType=atomic`, conditions a map on type.
const HPA = object({
  spec: implicitStruct({
    scaleTargetRef: implicitStruct({}),
    metrics: ATOMIC_LIST,
    behavior: struct({ scaleUp: struct({ policies: ATOMIC_LIST }), scaleDown: struct({ policies: ATOMIC_LIST }) }),
  }),
  status: implicitStruct({ currentMetrics: ATOMIC_LIST, conditions: CONDITIONS }),
})
// k8s.io/api networking/v1: ingress, egress and policyTypes are `+listType=atomic`; podSelector is a
// non-pointer LabelSelector (`+structType=atomic`), so a Go zero spec carries it.
const NETWORK_POLICY = object({
  spec: implicitStruct({ podSelector: { ...ATOMIC_STRUCT, implicit: true } as Topology, ingress: ATOMIC_LIST, egress: ATOMIC_LIST, policyTypes: ATOMIC_LIST }),
})
// apps/v1 ControllerRevision: `data` is a RawExtension, replaced whole.
const CONTROLLER_REVISION = object({ data: ATOMIC_STRUCT })
/** A kind the sandbox does not model: metadata typed, everything else open. */
const UNKNOWN = object({})

const BUILTIN: Record<string, Topology> = {
  'apps/v1/Deployment': DEPLOYMENT,
  'apps/v1/ReplicaSet': REPLICA_SET,
  'apps/v1/StatefulSet': STATEFUL_SET,
  'apps/v1/ControllerRevision': CONTROLLER_REVISION,
  'autoscaling/v2/HorizontalPodAutoscaler': HPA,
  '/v1/ResourceQuota': RESOURCE_QUOTA,
  '/v1/Pod': POD,
  '/v1/PodTemplate': object({ template: POD_TEMPLATE_SPEC }),
  '/v1/Service': SERVICE,
  'policy/v1/PodDisruptionBudget': PDB,
  'networking.k8s.io/v1/NetworkPolicy': NETWORK_POLICY,
  '/v1/ConfigMap': CONFIG_MAP,
  '/v1/Secret': SECRET,
  '/v1/ServiceAccount': SERVICE_ACCOUNT,
  '/v1/Namespace': NAMESPACE,
  '/v1/Event': CORE_EVENT,
  'events.k8s.io/v1/Event': EVENTS_EVENT,
  'coordination.k8s.io/v1/Lease': LEASE,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CRD,
  'rbac.authorization.k8s.io/v1/Role': ROLE,
  'rbac.authorization.k8s.io/v1/ClusterRole': CLUSTER_ROLE,
  'rbac.authorization.k8s.io/v1/RoleBinding': ROLE_BINDING,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ROLE_BINDING,
}

/**
 * The apply topology of a built-in kind (`group` '' for core). Unknown kinds get typed metadata
 * and an open body, so apply still works on them.
 */
export function builtinTopology(group: string, version: string, kind: string): Topology {
  return BUILTIN[`${group}/${version}/${kind}`] ?? UNKNOWN
}

/** Whether the sandbox has a modelled topology for this built-in kind. */
export function hasBuiltinTopology(group: string, version: string, kind: string): boolean {
  return `${group}/${version}/${kind}` in BUILTIN
}

/** Wraps a custom resource's schema topology (spec, status, …) with typed object metadata. */
export function customResourceTopology(body: Topology): Topology {
  const fields = body.type === 'struct' ? body.fields : {}
  const t: Topology & ImplicitFlag = {
    type: 'struct',
    fields: { ...fields, apiVersion: SCALAR, kind: SCALAR, metadata: METADATA },
    implicit: true,
  }
  if (body.type === 'struct' && body.preserveUnknown) t.preserveUnknown = true
  if (body.type === 'any') t.preserveUnknown = true
  return t
}
