/**
 * Validation of built-in objects and of every object's metadata, with the API server's field
 * paths and messages (k8s.io/apimachinery validation, pkg/apis/{apps,core,policy}/validation):
 * the mistakes an operator's templates can make and a real cluster refuses — bad label keys or
 * values, a Deployment selector that does not match its template, a changed selector, a container
 * without an image, a Service without ports.
 */
import { deepEqual } from '../json.ts'
import { validateResourceQuota } from './resourcequota.ts'
import { isRbacObject, validateRbac } from './rbac.ts'
import { compareQuantities, quantityOf, zeroQuantity } from '../quantity.ts'
import { validateNetworkPolicy } from './networkpolicy.ts'
import { validateConfigMapData, validateSecretData } from './secret.ts'
import { validateService } from './service.ts'
import type { FieldCause, KubeObject } from '../object.ts'

import { isObj, invalid, required, forbiddenField, notSupported, duplicate, q, goValue, goJson, struct, goMap } from './field.ts'
import { validateLabels, validateMetadata, selectorMatches, goSelector, validateLabelSelector, isEmptySelector, keyProblems, validateAnnotations } from './meta.ts'

/** supportedPortProtocols, sorted as sets.List gives them. */
const PORT_PROTOCOLS = ['SCTP', 'TCP', 'UDP']

function validatePodSpec(field: string, spec: unknown): FieldCause[] {
  if (!isObj(spec)) return [required(`${field}.containers`)]
  const out: FieldCause[] = []
  const containers = Array.isArray(spec.containers) ? spec.containers : []
  if (containers.length === 0) out.push(required(`${field}.containers`))
  const seen = new Set<string>()
  containers.forEach((c, i) => {
    const p = `${field}.containers[${i}]`
    if (!isObj(c)) return
    const name = typeof c.name === 'string' ? c.name : ''
    if (name === '') out.push(required(`${p}.name`))
    else if (seen.has(name)) out.push(duplicate(`${p}.name`, q(name)))
    seen.add(name)
    if (typeof c.image !== 'string' || c.image.trim() === '') out.push(required(`${p}.image`))
    const ports = Array.isArray(c.ports) ? c.ports : []
    ports.forEach((port, j) => {
      if (!isObj(port)) return
      const n = port.containerPort
      if (typeof n !== 'number' || n < 1 || n > 65535) out.push(invalid(`${p}.ports[${j}].containerPort`, String(n ?? 0), 'must be between 1 and 65535, inclusive'))
      // validateContainerPorts (pkg/apis/core/validation/validation.go); defaulting made an absent or empty protocol TCP.
      if (port.protocol !== undefined && port.protocol !== null && !PORT_PROTOCOLS.includes(String(port.protocol))) out.push(notSupported(`${p}.ports[${j}].protocol`, goValue(port.protocol), PORT_PROTOCOLS))
    })
  })
  return out
}

/** ValidateNonnegativeField. */
function nonNegative(field: string, v: unknown): FieldCause[] {
  return typeof v === 'number' && v < 0 ? [invalid(field, String(v), 'must be greater than or equal to 0')] : []
}

const percentMsg = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"

/** pkg/apis/apps/validation ValidatePositiveIntOrPercent then IsNotMoreThan100Percent. */
export function intOrPercent(field: string, v: unknown): FieldCause[] {
  if (typeof v === 'number') return nonNegative(field, v)
  if (typeof v !== 'string') return []
  if (!/^[0-9]+%$/.test(v)) return [invalid(field, q(v), percentMsg)]
  return Number(v.slice(0, -1)) > 100 ? [invalid(field, q(v), 'must not be greater than 100%')] : []
}

/** An int-or-percent's value: the number, or the percentage's number. */
function intOrPercentValue(v: unknown): number {
  if (typeof v === 'number') return v
  return typeof v === 'string' && /^[0-9]+%$/.test(v) ? Number(v.slice(0, -1)) : 0
}

/**
 * The selector and template rules shared by Deployment, ReplicaSet and StatefulSet
 * (pkg/apis/apps/validation ValidateDeploymentSpec / ValidateReplicaSetSpec): selector required,
 * valid and non-empty, template labels matched by it. The empty-selector message names
 * "deployment" for ReplicaSets too, as upstream does.
 */
function validateSelectorAndTemplate(spec: Record<string, unknown>, noun: string): FieldCause[] {
  const out: FieldCause[] = []
  const selector = spec.selector
  const template = isObj(spec.template) ? spec.template : {}
  const tmeta = isObj(template.metadata) ? template.metadata : {}
  if (!isObj(selector)) out.push(required('spec.selector'))
  else {
    out.push(...validateLabelSelector('spec.selector', selector))
    if (isEmptySelector(selector)) out.push(invalid('spec.selector', goSelector(selector), `empty selector is invalid for ${noun}`))
    else if (!selectorMatches(selector, isObj(tmeta.labels) ? tmeta.labels : {})) out.push(invalid('spec.template.metadata.labels', goMap(tmeta.labels), '`selector` does not match template `labels`'))
  }
  // ValidatePodTemplateSpec(template, fldPath "spec.template"), pkg/apis/core/validation/validation.go:
  // the template's labels and annotations are reported at spec.template.labels / .annotations.
  out.push(...validateLabels('spec.template.labels', tmeta.labels))
  out.push(...validateAnnotations('spec.template.annotations', tmeta.annotations))
  return out
}

function validateReplicated(obj: KubeObject, old: KubeObject | undefined, kind: 'Deployment' | 'ReplicaSet'): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = nonNegative('spec.replicas', spec.replicas)
  if (kind === 'ReplicaSet') out.push(...nonNegative('spec.minReadySeconds', spec.minReadySeconds))
  out.push(...validateSelectorAndTemplate(spec, 'deployment'))
  const template = isObj(spec.template) ? spec.template : {}
  out.push(...validatePodSpec('spec.template.spec', template.spec))
  if (kind === 'Deployment') {
    const strategy = isObj(spec.strategy) ? spec.strategy : {}
    const ru = isObj(strategy.rollingUpdate) ? strategy.rollingUpdate : undefined
    if (strategy.type === 'Recreate' && ru) out.push(forbiddenField('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'"))
    if (strategy.type === 'RollingUpdate' && ru) {
      const p = 'spec.strategy.rollingUpdate'
      out.push(...intOrPercent(`${p}.maxUnavailable`, ru.maxUnavailable).filter((c) => !c.message.endsWith('100%')))
      out.push(...intOrPercent(`${p}.maxSurge`, ru.maxSurge).filter((c) => !c.message.endsWith('100%')))
      if (intOrPercentValue(ru.maxUnavailable) === 0 && intOrPercentValue(ru.maxSurge) === 0) out.push(invalid(`${p}.maxUnavailable`, goValue(ru.maxUnavailable ?? 0), 'may not be 0 when `maxSurge` is 0'))
      out.push(...intOrPercent(`${p}.maxUnavailable`, ru.maxUnavailable).filter((c) => c.message.endsWith('100%')))
    }
    out.push(...nonNegative('spec.minReadySeconds', spec.minReadySeconds))
    out.push(...nonNegative('spec.revisionHistoryLimit', spec.revisionHistoryLimit))
    const pds = spec.progressDeadlineSeconds
    if (typeof pds === 'number') {
      out.push(...nonNegative('spec.progressDeadlineSeconds', pds))
      if (pds <= (typeof spec.minReadySeconds === 'number' ? spec.minReadySeconds : 0)) out.push(invalid('spec.progressDeadlineSeconds', String(pds), 'must be greater than minReadySeconds'))
    }
  }
  // apps/v1 selectors are immutable (pkg/registry/apps/{deployment,replicaset}/strategy.go ValidateUpdate).
  const oldSelector = old && isObj(old.spec) ? old.spec.selector : undefined
  if (old && !deepEqual(oldSelector ?? null, spec.selector ?? null)) out.push(invalid('spec.selector', goSelector(spec.selector), 'field is immutable'))
  return out
}

/** The StatefulSet spec fields an update may change (ValidateStatefulSetUpdate). */
const statefulSetMutable = ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds']

/**
 * StatefulSets (pkg/apis/apps/validation ValidateStatefulSetSpec / ValidateStatefulSetUpdate): the
 * pod template's spec is not validated there (upstream's TODO), its labels are reported at
 * `spec.template.labels`; an update may change only the fields in {@link statefulSetMutable},
 * anything else is one `spec: Forbidden`.
 */
function validateStatefulSet(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = []
  const pmp = spec.podManagementPolicy
  if (pmp === undefined || pmp === '') out.push(required('spec.podManagementPolicy'))
  else if (pmp !== 'OrderedReady' && pmp !== 'Parallel') out.push(invalid('spec.podManagementPolicy', goValue(pmp), "must be 'OrderedReady' or 'Parallel'"))
  const us = isObj(spec.updateStrategy) ? spec.updateStrategy : {}
  const ru = isObj(us.rollingUpdate) ? us.rollingUpdate : undefined
  if (us.type === undefined || us.type === '') out.push(required('spec.updateStrategy'))
  else if (us.type === 'OnDelete') {
    if (ru) out.push(invalid('spec.updateStrategy.rollingUpdate', goJson(struct({ Partition: ru.partition ?? 0, MaxUnavailable: ru.maxUnavailable ?? null })), "only allowed for updateStrategy 'RollingUpdate'"))
  } else if (us.type === 'RollingUpdate') {
    if (ru) {
      const p = 'spec.updateStrategy.rollingUpdate'
      out.push(...nonNegative(`${p}.partition`, ru.partition))
      if (ru.maxUnavailable !== undefined && ru.maxUnavailable !== null) {
        out.push(...intOrPercent(`${p}.maxUnavailable`, ru.maxUnavailable).filter((c) => !c.message.endsWith('100%')))
        if (intOrPercentValue(ru.maxUnavailable) === 0) out.push(invalid(`${p}.maxUnavailable`, goValue(ru.maxUnavailable), 'cannot be 0'))
        out.push(...intOrPercent(`${p}.maxUnavailable`, ru.maxUnavailable).filter((c) => c.message.endsWith('100%')))
      }
    }
  } else out.push(invalid('spec.updateStrategy', goJson(struct({ Type: us.type, RollingUpdate: ru ?? null })), "must be 'RollingUpdate' or 'OnDelete'"))
  const retention = spec.persistentVolumeClaimRetentionPolicy
  if (isObj(retention)) {
    for (const k of ['whenDeleted', 'whenScaled']) {
      const v = retention[k] ?? ''
      if (v !== 'Retain' && v !== 'Delete') out.push(notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, q(String(v)), ['Retain', 'Delete']))
    }
  }
  out.push(...nonNegative('spec.replicas', spec.replicas))
  out.push(...nonNegative('spec.minReadySeconds', spec.minReadySeconds))
  if (isObj(spec.ordinals)) out.push(...nonNegative('spec.ordinals.start', spec.ordinals.start))
  out.push(...validateSelectorAndTemplate(spec, 'statefulset'))
  if (old) {
    const without = (s: unknown): Record<string, unknown> => Object.fromEntries(Object.entries(isObj(s) ? s : {}).filter(([k]) => !statefulSetMutable.includes(k)))
    if (!deepEqual(without(spec), without(old.spec)))
      out.push(forbiddenField('spec', "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
  }
  return out
}

/**
 * PodDisruptionBudgets (pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec). The spec in
 * the both-set message is the internal Go type, which has no json tags: its field names print
 * capitalised.
 */
function validatePDB(obj: KubeObject): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = []
  const has = (k: string): boolean => spec[k] !== undefined && spec[k] !== null
  if (has('minAvailable') && has('maxUnavailable')) {
    const internal = struct({ MinAvailable: spec.minAvailable, Selector: isObj(spec.selector) ? JSON.parse(goSelector(spec.selector)) : null, MaxUnavailable: spec.maxUnavailable, UnhealthyPodEvictionPolicy: spec.unhealthyPodEvictionPolicy ?? null })
    out.push(invalid('spec', goJson(internal), 'minAvailable and maxUnavailable cannot be both set'))
  }
  if (has('minAvailable')) out.push(...intOrPercent('spec.minAvailable', spec.minAvailable))
  if (has('maxUnavailable')) out.push(...intOrPercent('spec.maxUnavailable', spec.maxUnavailable))
  out.push(...validateLabelSelector('spec.selector', spec.selector))
  const policy = spec.unhealthyPodEvictionPolicy
  if (policy !== undefined && policy !== null && policy !== 'IfHealthyBudget' && policy !== 'AlwaysAllow')
    out.push(notSupported('spec.unhealthyPodEvictionPolicy', q(String(policy)), ['AlwaysAllow', 'IfHealthyBudget']))
  return out
}

/**
 * Events (pkg/apis/core/validation/events.go): the involved object's namespace must be the
 * event's; an events.k8s.io/v1 Event also needs eventTime, reportingController,
 * reportingInstance, action and reason, a type of Normal or Warning, and none of the legacy
 * fields. Paths are those of the internal type the server validates (`involvedObject`, `message`).
 */
function validateEvent(obj: KubeObject, newApi: boolean): FieldCause[] {
  const o = obj as Record<string, unknown>
  const out: FieldCause[] = []
  const involved = isObj(newApi ? o.regarding : o.involvedObject) ? ((newApi ? o.regarding : o.involvedObject) as Record<string, unknown>) : {}
  const ns = obj.metadata.namespace ?? ''
  const ins = typeof involved.namespace === 'string' ? involved.namespace : ''
  if (ins === '' ? ns !== '' && ns !== 'default' : ns !== ins) out.push(invalid('involvedObject.namespace', q(ins), 'does not match event.namespace'))
  if (!newApi) return out
  const str = (k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '')
  if (str('eventTime') === '') out.push(required('eventTime'))
  if (str('type') !== 'Normal' && str('type') !== 'Warning') out.push(invalid('type', '""', `has invalid value: ${str('type')}`))
  if (str('deprecatedFirstTimestamp') !== '') out.push(invalid('firstTimestamp', '""', 'needs to be unset'))
  if (str('deprecatedLastTimestamp') !== '') out.push(invalid('lastTimestamp', '""', 'needs to be unset'))
  if (typeof o.deprecatedCount === 'number' && o.deprecatedCount !== 0) out.push(invalid('count', '""', 'needs to be unset'))
  if (isObj(o.deprecatedSource) && (o.deprecatedSource.component || o.deprecatedSource.host)) out.push(invalid('source', '""', 'needs to be unset'))
  const limits: [string, string, number][] = [
    ['reportingController', 'reportingController', 0],
    ['reportingInstance', 'reportingInstance', 128],
    ['action', 'action', 128],
    ['reason', 'reason', 128],
  ]
  for (const [key, field, limit] of limits) {
    const v = str(key)
    if (v === '') out.push(required(field))
    else if (limit > 0 && v.length > limit) out.push(invalid(field, '""', `can have at most ${limit} characters`))
  }
  if (str('reportingController') !== '') out.push(...keyProblems('reportingController', str('reportingController')))
  if (str('note').length > 1024) out.push(invalid('message', '""', 'can have at most 1024 characters'))
  return out
}

/** An absent map and an empty one: the same after storage's round trip. */
function mapOrNull(v: unknown): unknown {
  return isObj(v) && Object.keys(v).length === 0 ? null : (v ?? null)
}

/**
 * ConfigMaps and Secrets marked `immutable: true` (core/validation ValidateConfigMapUpdate,
 * ValidateSecretUpdate): the mark cannot be removed and the data cannot change — one
 * `Forbidden` per field, in upstream's order; a Secret's `type` never changes.
 */
function validateImmutableData(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const out: FieldCause[] = []
  if (!old) return out
  const secret = obj.kind === 'Secret'
  if (secret && (obj.type ?? 'Opaque') !== (old.type ?? 'Opaque')) out.push(invalid('type', goValue(obj.type ?? 'Opaque'), 'field is immutable'))
  if (old.immutable !== true) return out
  const locked = 'field is immutable when `immutable` is set'
  if (obj.immutable !== true) out.push(forbiddenField('immutable', locked))
  for (const field of secret ? ['data'] : ['data', 'binaryData']) {
    if (!deepEqual(mapOrNull(obj[field]), mapOrNull(old[field]))) out.push(forbiddenField(field, locked))
  }
  return out
}

/** apimachinery path validation IsValidPathSegmentName. */
function pathSegmentProblems(field: string, name: string): FieldCause[] {
  if (name === '.' || name === '..') return [invalid(field, q(name), `may not be '${name}'`)]
  const out: FieldCause[] = []
  for (const c of ['/', '%']) if (name.includes(c)) out.push(invalid(field, q(name), `may not contain '${c}'`))
  return out
}

/** A quantity's sign (1, 0, -1); NaN when it does not parse (the decoder would have refused it). */
function quantitySign(v: unknown): number {
  try {
    return compareQuantities(quantityOf(v as string | number), zeroQuantity)
  } catch {
    return Number.NaN
  }
}

/** autoscaling/validation ValidateCrossVersionObjectReference. */
function validateCrossVersionRef(field: string, ref: unknown): FieldCause[] {
  const r = isObj(ref) ? ref : {}
  const out: FieldCause[] = []
  for (const k of ['kind', 'name']) {
    const v = typeof r[k] === 'string' ? (r[k] as string) : ''
    if (v === '') out.push(required(`${field}.${k}`))
    else out.push(...pathSegmentProblems(`${field}.${k}`, v))
  }
  return out
}

/** autoscaling/validation validateMetricTarget. */
function validateMetricTarget(field: string, target: unknown): FieldCause[] {
  const t = isObj(target) ? target : {}
  const out: FieldCause[] = []
  const type = typeof t.type === 'string' ? t.type : ''
  if (type === '') out.push(required(`${field}.type`, 'must specify a metric target type'))
  if (type !== 'Utilization' && type !== 'Value' && type !== 'AverageValue') out.push(invalid(`${field}.type`, q(type), 'must be either Utilization, Value, or AverageValue'))
  for (const k of ['value', 'averageValue']) if (t[k] !== undefined && t[k] !== null && quantitySign(t[k]) !== 1) out.push(invalid(`${field}.${k}`, q(String(t[k])), 'must be positive'))
  if (typeof t.averageUtilization === 'number' && t.averageUtilization < 1) out.push(invalid(`${field}.averageUtilization`, String(t.averageUtilization), 'must be greater than 0'))
  return out
}

function validateMetricIdentifier(field: string, id: unknown): FieldCause[] {
  const name = isObj(id) && typeof id.name === 'string' ? id.name : ''
  if (name === '') return [required(`${field}.name`, 'must specify a metric name')]
  return pathSegmentProblems(`${field}.name`, name)
}

const has = (o: Record<string, unknown>, k: string): boolean => o[k] !== undefined && o[k] !== null

/** One metric source, as validateObjectSource, validateExternalSource, validatePodsSource, validate(Container)ResourceSource. */
function validateMetricSource(kind: string, field: string, src: Record<string, unknown>): FieldCause[] {
  const out: FieldCause[] = []
  const target = isObj(src.target) ? src.target : {}
  const tf = `${field}.target`
  if (kind === 'resource' || kind === 'containerResource') {
    const name = typeof src.name === 'string' ? src.name : ''
    if (name === '') out.push(required(`${field}.name`, 'must specify a resource name'))
    if (kind === 'containerResource') {
      const c = typeof src.container === 'string' ? src.container : ''
      if (c === '') out.push(required(`${field}.container`, 'must specify a container'))
    }
    out.push(...validateMetricTarget(tf, target))
    if (!has(target, 'averageUtilization') && !has(target, 'averageValue')) out.push(required(`${tf}.averageUtilization`, 'must set either a target raw value or a target utilization'))
    if (has(target, 'averageUtilization') && has(target, 'averageValue')) out.push(forbiddenField(`${tf}.averageValue`, 'may not set both a target raw value and a target utilization'))
    return out
  }
  if (kind === 'object') out.push(...validateCrossVersionRef(`${field}.describedObject`, src.describedObject))
  out.push(...validateMetricIdentifier(`${field}.metric`, src.metric))
  out.push(...validateMetricTarget(tf, target))
  if (kind === 'pods') {
    if (!has(target, 'averageValue')) out.push(required(`${tf}.averageValue`, 'must specify a positive target averageValue'))
  } else if (kind === 'object') {
    if (!has(target, 'value') && !has(target, 'averageValue')) out.push(required(`${tf}.averageValue`, 'must set either a target value or averageValue'))
  } else {
    if (!has(target, 'value') && !has(target, 'averageValue')) out.push(required(`${tf}.averageValue`, 'must set either a target value for metric or a per-pod target'))
    if (has(target, 'value') && has(target, 'averageValue')) out.push(forbiddenField(`${tf}.value`, 'may not set both a target value for metric and a per-pod target'))
  }
  return out
}

const metricSourceTypes = ['ContainerResource', 'External', 'Object', 'Pods', 'Resource']

/** autoscaling/validation validateMetricSpec. */
function validateMetricSpec(field: string, spec: Record<string, unknown>): FieldCause[] {
  const out: FieldCause[] = []
  const type = typeof spec.type === 'string' ? spec.type : ''
  if (type === '') out.push(required(`${field}.type`, 'must specify a metric source type'))
  if (!metricSourceTypes.includes(type)) out.push(notSupported(`${field}.type`, q(type), metricSourceTypes))
  const present: string[] = []
  for (const k of ['object', 'external', 'pods', 'resource', 'containerResource']) {
    if (!isObj(spec[k])) continue
    present.push(k)
    if (present.length === 1) out.push(...validateMetricSource(k, `${field}.${k}`, spec[k] as Record<string, unknown>))
  }
  const expected = metricSourceTypes.includes(type) ? type.charAt(0).toLowerCase() + type.slice(1) : ''
  if (metricSourceTypes.includes(type)) {
    if (!present.includes(expected)) out.push(required(`${field}.${expected}`, 'must populate information for the given metric source'))
  } else out.push(notSupported(`${field}.type`, q(type), metricSourceTypes))
  if (present.length !== 1) for (const k of present.filter((k) => k !== expected)) out.push(forbiddenField(`${field}.${k}`, 'must populate the given metric source only'))
  return out
}

/** autoscaling/validation validateScalingRules. */
function validateScalingRules(field: string, rules: unknown): FieldCause[] {
  if (!isObj(rules)) return []
  const out: FieldCause[] = []
  const sw = rules.stabilizationWindowSeconds
  if (typeof sw === 'number' && sw < 0) out.push(invalid(`${field}.stabilizationWindowSeconds`, String(sw), 'must be greater than or equal to zero'))
  if (typeof sw === 'number' && sw > 3600) out.push(invalid(`${field}.stabilizationWindowSeconds`, String(sw), 'must be less than or equal to 3600'))
  if (has(rules, 'selectPolicy') && !['Disabled', 'Max', 'Min'].includes(String(rules.selectPolicy))) out.push(notSupported(`${field}.selectPolicy`, q(String(rules.selectPolicy)), ['Disabled', 'Max', 'Min']))
  const policies = Array.isArray(rules.policies) ? rules.policies : []
  if (policies.length === 0) out.push(required(`${field}.policies`, 'must specify at least one Policy'))
  policies.forEach((p, i) => {
    const pol = isObj(p) ? p : {}
    const pf = `${field}.policies[${i}]`
    if (pol.type !== 'Pods' && pol.type !== 'Percent') out.push(notSupported(`${pf}.type`, q(String(pol.type ?? '')), ['Percent', 'Pods']))
    const value = typeof pol.value === 'number' ? pol.value : 0
    const period = typeof pol.periodSeconds === 'number' ? pol.periodSeconds : 0
    if (value <= 0) out.push(invalid(`${pf}.value`, String(value), 'must be greater than zero'))
    if (period <= 0) out.push(invalid(`${pf}.periodSeconds`, String(period), 'must be greater than zero'))
    if (period > 1800) out.push(invalid(`${pf}.periodSeconds`, String(period), 'must be less than or equal to 1800'))
  })
  return out
}

/**
 * autoscaling/v2 HorizontalPodAutoscalers (pkg/apis/autoscaling/validation/validation.go
 * validateHorizontalPodAutoscalerSpec), with HPAScaleToZero off as in a default 1.34 cluster:
 * minReplicas ≥ 1 (an update keeps an existing 0), maxReplicas ≥ 1 and ≥ minReplicas, the
 * scale target's kind and name, each metric, the behavior's scaling rules.
 */
function validateHorizontalPodAutoscaler(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = []
  const oldMin = old && isObj(old.spec) ? old.spec.minReplicas : undefined
  const lower = oldMin === 0 ? 0 : 1
  const min = typeof spec.minReplicas === 'number' ? spec.minReplicas : undefined
  const max = typeof spec.maxReplicas === 'number' ? spec.maxReplicas : 0
  if (min !== undefined && min < lower) out.push(invalid('spec.minReplicas', String(min), `must be greater than or equal to ${lower}`))
  if (max < 1) out.push(invalid('spec.maxReplicas', String(max), 'must be greater than 0'))
  if (min !== undefined && max < min) out.push(invalid('spec.maxReplicas', String(max), 'must be greater than or equal to `minReplicas`'))
  out.push(...validateCrossVersionRef('spec.scaleTargetRef', spec.scaleTargetRef))
  const metrics = Array.isArray(spec.metrics) ? spec.metrics : []
  metrics.forEach((m, i) => out.push(...validateMetricSpec(`spec.metrics[${i}]`, isObj(m) ? m : {})))
  if (min === 0 && !metrics.some((m) => isObj(m) && (m.type === 'Object' || m.type === 'External')))
    out.push(forbiddenField('spec.metrics', 'must specify at least one Object or External metric to support scaling to zero replicas'))
  if (isObj(spec.behavior)) {
    out.push(...validateScalingRules('spec.behavior.scaleUp', spec.behavior.scaleUp))
    out.push(...validateScalingRules('spec.behavior.scaleDown', spec.behavior.scaleDown))
  }
  return out
}

/**
 * apps/v1 ControllerRevisions (pkg/apis/apps/validation ValidateControllerRevisionCreate and
 * ValidateControllerRevisionUpdate): `data` is required and never changes, `revision` is not negative.
 */
function validateControllerRevision(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const out: FieldCause[] = []
  if (obj.data === undefined || obj.data === null) out.push(required('data', 'data is mandatory'))
  out.push(...nonNegative('revision', obj.revision ?? 0))
  if (old && !deepEqual(obj.data ?? null, old.data ?? null)) out.push(invalid('data', goJson(obj.data ?? null), 'field is immutable'))
  return out
}

/** A kind's validation: `old` is undefined on create. Causes come in the upstream validator's order. */
type KindValidator = (obj: KubeObject, old: KubeObject | undefined) => FieldCause[]

/** Validation per built-in kind (`apiVersion/kind`); kinds not listed get metadata checks only. */
const validators: Record<string, KindValidator> = {
  'apps/v1/Deployment': (o, old) => validateReplicated(o, old, 'Deployment'),
  'apps/v1/ReplicaSet': (o, old) => validateReplicated(o, old, 'ReplicaSet'),
  'apps/v1/StatefulSet': validateStatefulSet,
  'apps/v1/ControllerRevision': validateControllerRevision,
  'autoscaling/v2/HorizontalPodAutoscaler': validateHorizontalPodAutoscaler,
  'v1/Pod': (o) => validatePodSpec('spec', o.spec),
  // ValidateConfigMap on create; ValidateConfigMapUpdate (immutable, then ValidateConfigMap) on update.
  'v1/ConfigMap': (o, old) => [...validateImmutableData(o, old), ...validateConfigMapData(o)],
  // ValidateSecret on create; ValidateSecretUpdate (type, immutable, then ValidateSecret) on update.
  'v1/Secret': (o, old) => [...validateImmutableData(o, old), ...validateSecretData(o)],
  'v1/Service': validateService,
  'policy/v1/PodDisruptionBudget': validatePDB,
  'networking.k8s.io/v1/NetworkPolicy': validateNetworkPolicy,
  'v1/ResourceQuota': validateResourceQuota,
  'v1/Event': (o) => validateEvent(o, false),
  'events.k8s.io/v1/Event': (o) => validateEvent(o, true),
}

/**
 * Validates an object of a built-in kind on create (`old` undefined) or update. Custom resources
 * get {@link validateMetadata} only; their schema validation is the CRD's.
 */
export function validateBuiltin(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const out = validateMetadata(obj)
  const validator = validators[`${obj.apiVersion}/${obj.kind}`]
  if (validator) out.push(...validator(obj, old))
  else if (isRbacObject(obj)) out.push(...validateRbac(obj, old))
  return out
}

/**
 * The uid a patch or an apply leaves in an existing object, refused when it is not the stored one:
 * the patched object keeps a uid it carries (apiserver registry/rest/update.go `BeforeUpdate`:
 * "Use the existing UID if none is provided") and `ValidateObjectMetaUpdate` holds it immutable
 * (apimachinery api/validation/objectmeta.go). A PUT differs: its body's uid is a precondition
 * (rest/update.go `defaultUpdatedObjectInfo.Preconditions`, a 409), while a patch's updated-object
 * info has no object and so no precondition (endpoints/handlers/patch.go).
 */
export function uidChange(sent: unknown, stored: string | undefined): FieldCause[] {
  if (typeof sent !== 'string' || sent === '' || sent === (stored ?? '')) return []
  return [invalid('metadata.uid', goValue(sent), 'field is immutable')]
}
