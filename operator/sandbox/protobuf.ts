/**
 * Decoding of the Kubernetes protobuf envelope for the few kinds that kubectl's generators send
 * as protobuf (`kubectl create namespace|configmap|secret|serviceaccount|service|deployment`,
 * `kubectl autoscale`) and
 * for the DeleteOptions of typed clients (helm): client-go's typed clients write protobuf and do
 * not fall back to JSON on 415. The schemas below are the k8s.io/api `generated.proto` field numbers of what
 * those commands fill in; any other field makes the body undecodable (415) rather than silently
 * dropped, so nothing a client sent is lost.
 */
import type { KubeObject } from './types.ts'

/** A protobuf body this module cannot decode faithfully. */
export class ProtobufError extends Error {
  override name = 'ProtobufError'
}

type Scalar = 'string' | 'bytes' | 'int' | 'bool' | 'time' | 'quantity' | 'intOrString'

interface Field {
  name: string
  type: Scalar | Message
  repeated?: boolean
  /** A map<string, value>; `type` is the value's. */
  map?: boolean
  /** A pointer field in Go: present means set, even at its zero value. */
  keep?: boolean
}

interface Message {
  name: string
  fields: Record<number, Field>
}

const f = (name: string, type: Scalar | Message, opts: Omit<Field, 'name' | 'type'> = {}): Field => ({ name, type, ...opts })
const msg = (name: string, fields: Record<number, Field>): Message => ({ name, fields })

const ownerReference = msg('OwnerReference', {
  1: f('kind', 'string'),
  3: f('name', 'string'),
  4: f('uid', 'string'),
  5: f('apiVersion', 'string'),
  6: f('controller', 'bool', { keep: true }),
  7: f('blockOwnerDeletion', 'bool', { keep: true }),
})

const objectMeta = msg('ObjectMeta', {
  1: f('name', 'string'),
  2: f('generateName', 'string'),
  3: f('namespace', 'string'),
  4: f('selfLink', 'string'),
  5: f('uid', 'string'),
  6: f('resourceVersion', 'string'),
  7: f('generation', 'int'),
  8: f('creationTimestamp', 'time'),
  9: f('deletionTimestamp', 'time'),
  10: f('deletionGracePeriodSeconds', 'int', { keep: true }),
  11: f('labels', 'string', { map: true }),
  12: f('annotations', 'string', { map: true }),
  13: f('ownerReferences', ownerReference, { repeated: true }),
  14: f('finalizers', 'string', { repeated: true }),
})

const labelSelector = msg('LabelSelector', {
  1: f('matchLabels', 'string', { map: true }),
  2: f('matchExpressions', msg('LabelSelectorRequirement', { 1: f('key', 'string'), 2: f('operator', 'string'), 3: f('values', 'string', { repeated: true }) }), { repeated: true }),
})

const localObjectReference = msg('LocalObjectReference', { 1: f('name', 'string') })

const container = msg('Container', {
  1: f('name', 'string'),
  2: f('image', 'string'),
  3: f('command', 'string', { repeated: true }),
  4: f('args', 'string', { repeated: true }),
  5: f('workingDir', 'string'),
  6: f('ports', msg('ContainerPort', { 1: f('name', 'string'), 2: f('hostPort', 'int'), 3: f('containerPort', 'int'), 4: f('protocol', 'string'), 5: f('hostIP', 'string') }), { repeated: true }),
  7: f('env', msg('EnvVar', { 1: f('name', 'string'), 2: f('value', 'string') }), { repeated: true }),
  8: f('resources', msg('ResourceRequirements', { 1: f('limits', 'quantity', { map: true }), 2: f('requests', 'quantity', { map: true }) })),
  13: f('terminationMessagePath', 'string'),
  14: f('imagePullPolicy', 'string'),
  16: f('stdin', 'bool'),
  17: f('stdinOnce', 'bool'),
  18: f('tty', 'bool'),
  20: f('terminationMessagePolicy', 'string'),
})

const podSpec = msg('PodSpec', {
  2: f('containers', container, { repeated: true }),
  3: f('restartPolicy', 'string'),
  4: f('terminationGracePeriodSeconds', 'int', { keep: true }),
  6: f('dnsPolicy', 'string'),
  7: f('nodeSelector', 'string', { map: true }),
  8: f('serviceAccountName', 'string'),
  9: f('serviceAccount', 'string'),
  10: f('nodeName', 'string'),
  11: f('hostNetwork', 'bool'),
  12: f('hostPID', 'bool'),
  13: f('hostIPC', 'bool'),
  15: f('imagePullSecrets', localObjectReference, { repeated: true }),
  16: f('hostname', 'string'),
  17: f('subdomain', 'string'),
  19: f('schedulerName', 'string'),
  20: f('initContainers', container, { repeated: true }),
  21: f('automountServiceAccountToken', 'bool', { keep: true }),
  24: f('priorityClassName', 'string'),
})

const podTemplateSpec = msg('PodTemplateSpec', { 1: f('metadata', objectMeta), 2: f('spec', podSpec) })

const podStatus = msg('PodStatus', {
  1: f('phase', 'string'),
  3: f('message', 'string'),
  4: f('reason', 'string'),
  5: f('hostIP', 'string'),
  6: f('podIP', 'string'),
  9: f('qosClass', 'string'),
  11: f('nominatedNodeName', 'string'),
  14: f('resize', 'string'),
  17: f('observedGeneration', 'int'),
})

const servicePort = msg('ServicePort', {
  1: f('name', 'string'),
  2: f('protocol', 'string'),
  3: f('port', 'int'),
  4: f('targetPort', 'intOrString'),
  5: f('nodePort', 'int'),
  6: f('appProtocol', 'string', { keep: true }),
})

const serviceSpec = msg('ServiceSpec', {
  1: f('ports', servicePort, { repeated: true }),
  2: f('selector', 'string', { map: true }),
  3: f('clusterIP', 'string'),
  4: f('type', 'string'),
  5: f('externalIPs', 'string', { repeated: true }),
  7: f('sessionAffinity', 'string'),
  8: f('loadBalancerIP', 'string'),
  10: f('externalName', 'string'),
  11: f('externalTrafficPolicy', 'string'),
  12: f('healthCheckNodePort', 'int'),
  13: f('publishNotReadyAddresses', 'bool'),
})

const deploymentSpec = msg('DeploymentSpec', {
  1: f('replicas', 'int', { keep: true }),
  2: f('selector', labelSelector),
  3: f('template', podTemplateSpec),
  4: f('strategy', msg('DeploymentStrategy', { 1: f('type', 'string'), 2: f('rollingUpdate', msg('RollingUpdateDeployment', { 1: f('maxUnavailable', 'intOrString', { keep: true }), 2: f('maxSurge', 'intOrString', { keep: true }) })) })),
  5: f('minReadySeconds', 'int'),
  6: f('revisionHistoryLimit', 'int', { keep: true }),
  7: f('paused', 'bool'),
  9: f('progressDeadlineSeconds', 'int', { keep: true }),
})

const deploymentStatus = msg('DeploymentStatus', {
  1: f('observedGeneration', 'int'),
  2: f('replicas', 'int'),
  3: f('updatedReplicas', 'int'),
  4: f('unavailableReplicas', 'int'),
  5: f('availableReplicas', 'int'),
  7: f('readyReplicas', 'int'),
})

/** Schemas of the top-level kinds, by `apiVersion/kind`. */
const kinds: Record<string, Message> = {
  'v1/Namespace': msg('Namespace', {
    1: f('metadata', objectMeta),
    2: f('spec', msg('NamespaceSpec', { 1: f('finalizers', 'string', { repeated: true }) })),
    3: f('status', msg('NamespaceStatus', { 1: f('phase', 'string') })),
  }),
  'v1/ConfigMap': msg('ConfigMap', {
    1: f('metadata', objectMeta),
    2: f('data', 'string', { map: true }),
    3: f('binaryData', 'bytes', { map: true }),
    4: f('immutable', 'bool', { keep: true }),
  }),
  'v1/Secret': msg('Secret', {
    1: f('metadata', objectMeta),
    2: f('data', 'bytes', { map: true }),
    3: f('type', 'string'),
    4: f('stringData', 'string', { map: true }),
    5: f('immutable', 'bool', { keep: true }),
  }),
  'v1/ServiceAccount': msg('ServiceAccount', {
    1: f('metadata', objectMeta),
    3: f('imagePullSecrets', localObjectReference, { repeated: true }),
    4: f('automountServiceAccountToken', 'bool', { keep: true }),
  }),
  'v1/Service': msg('Service', {
    1: f('metadata', objectMeta),
    2: f('spec', serviceSpec),
    3: f('status', msg('ServiceStatus', { 1: f('loadBalancer', msg('LoadBalancerStatus', {})) })),
  }),
  'v1/Pod': msg('Pod', { 1: f('metadata', objectMeta), 2: f('spec', podSpec), 3: f('status', podStatus) }),
  'apps/v1/Deployment': msg('Deployment', { 1: f('metadata', objectMeta), 2: f('spec', deploymentSpec), 3: f('status', deploymentStatus) }),
}

// autoscaling/v2 (k8s.io/api autoscaling/v2/generated.proto): what `kubectl autoscale` sends.
const crossVersionObjectReference = msg('CrossVersionObjectReference', { 1: f('kind', 'string'), 2: f('name', 'string'), 3: f('apiVersion', 'string') })
const metricTarget = msg('MetricTarget', { 1: f('type', 'string'), 2: f('value', 'quantity'), 3: f('averageValue', 'quantity'), 4: f('averageUtilization', 'int', { keep: true }) })
const metricIdentifier = msg('MetricIdentifier', { 1: f('name', 'string'), 2: f('selector', labelSelector) })
const metricValueStatus = msg('MetricValueStatus', { 1: f('value', 'quantity'), 2: f('averageValue', 'quantity'), 3: f('averageUtilization', 'int', { keep: true }) })
const scalingRules = msg('HPAScalingRules', {
  1: f('selectPolicy', 'string', { keep: true }),
  2: f('policies', msg('HPAScalingPolicy', { 1: f('type', 'string'), 2: f('value', 'int', { keep: true }), 3: f('periodSeconds', 'int', { keep: true }) }), { repeated: true }),
  3: f('stabilizationWindowSeconds', 'int', { keep: true }),
  4: f('tolerance', 'quantity'),
})
kinds['autoscaling/v2/HorizontalPodAutoscaler'] = msg('HorizontalPodAutoscaler', {
  1: f('metadata', objectMeta),
  2: f('spec', msg('HorizontalPodAutoscalerSpec', {
    1: f('scaleTargetRef', crossVersionObjectReference),
    2: f('minReplicas', 'int', { keep: true }),
    3: f('maxReplicas', 'int', { keep: true }),
    4: f('metrics', msg('MetricSpec', {
      1: f('type', 'string'),
      2: f('object', msg('ObjectMetricSource', { 1: f('describedObject', crossVersionObjectReference), 2: f('target', metricTarget), 3: f('metric', metricIdentifier) })),
      3: f('pods', msg('PodsMetricSource', { 1: f('metric', metricIdentifier), 2: f('target', metricTarget) })),
      4: f('resource', msg('ResourceMetricSource', { 1: f('name', 'string'), 2: f('target', metricTarget) })),
      5: f('external', msg('ExternalMetricSource', { 1: f('metric', metricIdentifier), 2: f('target', metricTarget) })),
      7: f('containerResource', msg('ContainerResourceMetricSource', { 1: f('name', 'string'), 2: f('target', metricTarget), 3: f('container', 'string') })),
    }), { repeated: true }),
    5: f('behavior', msg('HorizontalPodAutoscalerBehavior', { 1: f('scaleUp', scalingRules), 2: f('scaleDown', scalingRules) })),
  })),
  3: f('status', msg('HorizontalPodAutoscalerStatus', {
    1: f('observedGeneration', 'int'),
    2: f('lastScaleTime', 'time'),
    3: f('currentReplicas', 'int'),
    4: f('desiredReplicas', 'int'),
    5: f('currentMetrics', msg('MetricStatus', { 1: f('type', 'string'), 4: f('resource', msg('ResourceMetricStatus', { 1: f('name', 'string'), 2: f('current', metricValueStatus) })) }), { repeated: true }),
  })),
})
// authorization.k8s.io/v1 and authentication.k8s.io/v1: what `kubectl auth can-i|whoami` and
// `kubectl create token` send.
const resourceAttributes = msg('ResourceAttributes', { 1: f('namespace', 'string'), 2: f('verb', 'string'), 3: f('group', 'string'), 4: f('version', 'string'), 5: f('resource', 'string'), 6: f('subresource', 'string'), 7: f('name', 'string') })
const nonResourceAttributes = msg('NonResourceAttributes', { 1: f('path', 'string'), 2: f('verb', 'string') })
const accessReviewStatus = msg('SubjectAccessReviewStatus', { 1: f('allowed', 'bool'), 2: f('reason', 'string'), 3: f('evaluationError', 'string'), 4: f('denied', 'bool') })
const subjectAccessReview = (name: string) =>
  msg(name, {
    1: f('metadata', objectMeta),
    2: f('spec', msg('SubjectAccessReviewSpec', { 1: f('resourceAttributes', resourceAttributes), 2: f('nonResourceAttributes', nonResourceAttributes), 3: f('user', 'string'), 4: f('groups', 'string', { repeated: true }), 6: f('uid', 'string') })),
    3: f('status', accessReviewStatus),
  })
kinds['authorization.k8s.io/v1/SubjectAccessReview'] = subjectAccessReview('SubjectAccessReview')
kinds['authorization.k8s.io/v1/LocalSubjectAccessReview'] = subjectAccessReview('LocalSubjectAccessReview')
kinds['authorization.k8s.io/v1/SelfSubjectAccessReview'] = msg('SelfSubjectAccessReview', {
  1: f('metadata', objectMeta),
  2: f('spec', msg('SelfSubjectAccessReviewSpec', { 1: f('resourceAttributes', resourceAttributes), 2: f('nonResourceAttributes', nonResourceAttributes) })),
  3: f('status', accessReviewStatus),
})
kinds['authorization.k8s.io/v1/SelfSubjectRulesReview'] = msg('SelfSubjectRulesReview', {
  1: f('metadata', objectMeta),
  2: f('spec', msg('SelfSubjectRulesReviewSpec', { 1: f('namespace', 'string') })),
  3: f('status', msg('SubjectRulesReviewStatus', { 3: f('incomplete', 'bool'), 4: f('evaluationError', 'string') })),
})
kinds['authentication.k8s.io/v1/SelfSubjectReview'] = msg('SelfSubjectReview', { 1: f('metadata', objectMeta), 2: f('status', msg('SelfSubjectReviewStatus', { 1: f('userInfo', msg('UserInfo', { 1: f('username', 'string'), 2: f('uid', 'string'), 3: f('groups', 'string', { repeated: true }) })) })) })
kinds['authentication.k8s.io/v1/TokenRequest'] = msg('TokenRequest', {
  1: f('metadata', objectMeta),
  2: f('spec', msg('TokenRequestSpec', { 1: f('audiences', 'string', { repeated: true }), 3: f('boundObjectRef', msg('BoundObjectReference', { 1: f('kind', 'string'), 2: f('apiVersion', 'string'), 3: f('name', 'string'), 4: f('uid', 'string') })), 4: f('expirationSeconds', 'int', { keep: true }) })),
  3: f('status', msg('TokenRequestStatus', { 1: f('token', 'string'), 2: f('expirationTimestamp', 'time') })),
})
kinds['authentication.k8s.io/v1/TokenReview'] = msg('TokenReview', { 1: f('metadata', objectMeta), 2: f('spec', msg('TokenReviewSpec', { 1: f('token', 'string'), 2: f('audiences', 'string', { repeated: true }) })), 3: f('status', msg('TokenReviewStatus', {})) })

// rbac.authorization.k8s.io/v1: what `kubectl create role|clusterrole|rolebinding|clusterrolebinding` send.
const policyRule = msg('PolicyRule', { 1: f('verbs', 'string', { repeated: true }), 2: f('apiGroups', 'string', { repeated: true }), 3: f('resources', 'string', { repeated: true }), 4: f('resourceNames', 'string', { repeated: true }), 5: f('nonResourceURLs', 'string', { repeated: true }) })
const roleBinding = (name: string) =>
  msg(name, {
    1: f('metadata', objectMeta),
    2: f('subjects', msg('Subject', { 1: f('kind', 'string'), 2: f('apiGroup', 'string'), 3: f('name', 'string'), 4: f('namespace', 'string') }), { repeated: true }),
    3: f('roleRef', msg('RoleRef', { 1: f('apiGroup', 'string'), 2: f('kind', 'string'), 3: f('name', 'string') })),
  })
kinds['rbac.authorization.k8s.io/v1/Role'] = msg('Role', { 1: f('metadata', objectMeta), 2: f('rules', policyRule, { repeated: true }) })
kinds['rbac.authorization.k8s.io/v1/ClusterRole'] = msg('ClusterRole', {
  1: f('metadata', objectMeta),
  2: f('rules', policyRule, { repeated: true }),
  3: f('aggregationRule', msg('AggregationRule', { 1: f('clusterRoleSelectors', msg('LabelSelector', { 1: f('matchLabels', 'string', { map: true }) }), { repeated: true }) })),
})
kinds['rbac.authorization.k8s.io/v1/RoleBinding'] = roleBinding('RoleBinding')
kinds['rbac.authorization.k8s.io/v1/ClusterRoleBinding'] = roleBinding('ClusterRoleBinding')

const deleteOptions = msg('DeleteOptions', {
  1: f('gracePeriodSeconds', 'int', { keep: true }),
  2: f('preconditions', msg('Preconditions', { 1: f('uid', 'string', { keep: true }), 2: f('resourceVersion', 'string', { keep: true }) })),
  3: f('orphanDependents', 'bool', { keep: true }),
  4: f('propagationPolicy', 'string', { keep: true }),
  5: f('dryRun', 'string', { repeated: true }),
})
// Typed clients (helm's release storage among them) send their DeleteOptions as protobuf too.
kinds['meta.k8s.io/v1/DeleteOptions'] = deleteOptions
kinds['v1/DeleteOptions'] = deleteOptions

const typeMeta = msg('TypeMeta', { 1: f('apiVersion', 'string'), 2: f('kind', 'string') })
const unknown = msg('Unknown', { 1: f('typeMeta', typeMeta), 2: f('raw', 'bytes'), 3: f('contentEncoding', 'string'), 4: f('contentType', 'string') })

/** A cursor over protobuf bytes. */
class Reader {
  readonly buf: Uint8Array
  pos: number
  readonly end: number
  constructor(buf: Uint8Array, pos = 0, end = buf.length) {
    this.buf = buf
    this.pos = pos
    this.end = end
  }
  varint(): bigint {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (this.pos >= this.end) throw new ProtobufError('truncated varint')
      const b = this.buf[this.pos++] as number
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
      if (shift > 63n) throw new ProtobufError('varint too long')
    }
  }
  bytes(): Uint8Array {
    const len = Number(this.varint())
    if (this.pos + len > this.end) throw new ProtobufError('truncated field')
    const out = this.buf.subarray(this.pos, this.pos + len)
    this.pos += len
    return out
  }
  skip(wire: number): void {
    if (wire === 0) this.varint()
    else if (wire === 1) this.pos += 8
    else if (wire === 2) this.bytes()
    else if (wire === 5) this.pos += 4
    else throw new ProtobufError(`unsupported wire type ${wire}`)
  }
}

/** Go's int64 from a varint (two's complement). */
function int64(v: bigint): number {
  return Number(BigInt.asIntN(64, v))
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function decodeScalar(type: Scalar, r: Reader, wire: number, where: string): unknown {
  switch (type) {
    case 'int':
      if (wire !== 0) throw new ProtobufError(`${where}: expected a varint`)
      return int64(r.varint())
    case 'bool':
      if (wire !== 0) throw new ProtobufError(`${where}: expected a varint`)
      return r.varint() !== 0n
    case 'string':
      if (wire !== 2) throw new ProtobufError(`${where}: expected bytes`)
      return utf8.decode(r.bytes())
    case 'bytes':
      if (wire !== 2) throw new ProtobufError(`${where}: expected bytes`)
      return Buffer.from(r.bytes()).toString('base64')
    case 'quantity': {
      const q = decodeMessage(msg('Quantity', { 1: f('string', 'string', { keep: true }) }), sub(r, wire, where), where)
      return q.string ?? ''
    }
    case 'time': {
      const t = decodeMessage(msg('Time', { 1: f('seconds', 'int', { keep: true }), 2: f('nanos', 'int', { keep: true }) }), sub(r, wire, where), where)
      if (t.seconds === undefined && t.nanos === undefined) return undefined
      return new Date(Number(t.seconds ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
    }
    case 'intOrString': {
      const v = decodeMessage(msg('IntOrString', { 1: f('type', 'int', { keep: true }), 2: f('intVal', 'int', { keep: true }), 3: f('strVal', 'string', { keep: true }) }), sub(r, wire, where), where)
      return v.type === 1 ? (v.strVal ?? '') : (v.intVal ?? 0)
    }
  }
}

function sub(r: Reader, wire: number, where: string): Reader {
  if (wire !== 2) throw new ProtobufError(`${where}: expected a message`)
  const b = r.bytes()
  return new Reader(b)
}

function isZero(v: unknown): boolean {
  return v === undefined || v === '' || v === 0 || v === false
}

function decodeMessage(m: Message, r: Reader, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  while (r.pos < r.end) {
    const key = Number(r.varint())
    const num = key >>> 3
    const wire = key & 7
    const field = m.fields[num]
    const path = `${where}.${field?.name ?? `#${num}`}`
    if (!field) throw new ProtobufError(`${m.name} field ${num} is not supported`)
    let value: unknown
    if (field.map) {
      const entry = decodeMapEntry(field.type as Scalar, sub(r, wire, path), path)
      const target = (out[field.name] ??= {}) as Record<string, unknown>
      target[entry[0]] = entry[1]
      continue
    }
    if (typeof field.type === 'object') value = decodeMessage(field.type, sub(r, wire, path), path)
    else value = decodeScalar(field.type, r, wire, path)
    if (field.repeated) {
      ;((out[field.name] ??= []) as unknown[]).push(value)
      continue
    }
    if (value === undefined || (!field.keep && typeof field.type !== 'object' && isZero(value))) {
      delete out[field.name]
      continue
    }
    out[field.name] = value
  }
  return out
}

function decodeMapEntry(type: Scalar, r: Reader, where: string): [string, unknown] {
  let k = ''
  let v: unknown = ''
  while (r.pos < r.end) {
    const key = Number(r.varint())
    const num = key >>> 3
    const wire = key & 7
    if (num === 1) k = decodeScalar('string', r, wire, where) as string
    else if (num === 2) v = decodeScalar(type, r, wire, where)
    else r.skip(wire)
  }
  return [k, v]
}

/** The magic prefix of Kubernetes protobuf bodies. */
const magic = [0x6b, 0x38, 0x73, 0x00]

/**
 * Decodes a `application/vnd.kubernetes.protobuf` body into the JSON object it stands for.
 * @throws ProtobufError for anything outside the supported kinds and fields
 */
export function decodeProtobuf(body: Uint8Array): KubeObject {
  if (body.length < 4 || magic.some((b, i) => body[i] !== b)) throw new ProtobufError('missing the k8s protobuf prefix')
  const env = decodeMessage(unknown, new Reader(body, 4), 'Unknown')
  const tm = (env.typeMeta ?? {}) as { apiVersion?: string; kind?: string }
  const apiVersion = tm.apiVersion ?? ''
  const kind = tm.kind ?? ''
  if (env.contentEncoding) throw new ProtobufError(`content encoding ${String(env.contentEncoding)} is not supported`)
  const schema = kinds[`${apiVersion}/${kind}`]
  if (!schema) throw new ProtobufError(`${apiVersion}, Kind=${kind} is not supported in protobuf`)
  const raw = Buffer.from(String(env.raw ?? ''), 'base64')
  const obj = decodeMessage(schema, new Reader(raw), kind)
  if (kind === 'DeleteOptions') return { apiVersion, kind, ...obj } as unknown as KubeObject
  return { apiVersion, kind, metadata: {}, ...obj } as KubeObject
}
