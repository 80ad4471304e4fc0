/**
 * Services as the API server's Service registry treats them: how a write's `clusterIP`,
 * `clusterIPs`, `ipFamilies` and `ipFamilyPolicy` are completed from the stored object and
 * allocated (pkg/registry/core/service/storage/storage.go `patchAllocatedValues`,
 * `normalizeClusterIPs`; pkg/registry/core/service/strategy.go `dropTypeDependentFields`;
 * storage/alloc.go for a single-stack IPv4 cluster), and how they are validated
 * (pkg/apis/core/validation/validation.go `ValidateService`, `ValidateServiceUpdate`,
 * `validateUpgradeDowngradeClusterIPs`, `validateUpgradeDowngradeIPFamilies`,
 * `ValidateServiceClusterIPsRelatedFields`). The sandbox is a single-stack IPv4 cluster.
 */
import { isIPv4, isIPv6 } from 'node:net'
import { deepEqual } from '../json.ts'
import type { FieldCause, Json, KubeObject } from '../object.ts'
import { duplicate, forbiddenField, goJson, goValue, invalid, isObj, notSupported, q, required, struct } from './field.ts'
import { validateLabels } from './meta.ts'

type Spec = Record<string, unknown>

function specOf(svc: KubeObject | undefined): Spec {
  if (!svc) return {}
  if (!isObj(svc.spec)) svc.spec = {}
  return svc.spec as Spec
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : []
}

function needsClusterIP(spec: Spec): boolean {
  return spec.type !== 'ExternalName'
}

function isHeadless(spec: Spec): boolean {
  const ips = strings(spec.clusterIPs)
  return ips.length === 1 && ips[0] === 'None'
}

function unset(v: unknown): boolean {
  return v === undefined || v === null || v === ''
}

/**
 * Completes a Service's IP fields before validation, in place: on update the values the server
 * allocated are kept when the request leaves them out, `clusterIP` and `clusterIPs` are kept in
 * step, and a change to ExternalName clears what it no longer needs. A Service that needs an
 * address and has none gets one from `allocate`. Returns what the allocator refuses (its loose
 * pre-validation, families this cluster lacks): the server answers 422 with those alone.
 */
export function prepareService(svc: KubeObject, old: KubeObject | undefined, allocate: () => string): FieldCause[] {
  const spec = specOf(svc)
  const oldSpec = old ? specOf(old) : undefined
  if (oldSpec) {
    // patchAllocatedValues: a client that resubmits its manifest keeps the allocated address.
    if (needsClusterIP(oldSpec) && needsClusterIP(spec)) {
      if (unset(spec.clusterIP)) spec.clusterIP = oldSpec.clusterIP
      if (strings(spec.clusterIPs).length === 0 && strings(oldSpec.clusterIPs).length > 0) spec.clusterIPs = oldSpec.clusterIPs
    }
    normalizeClusterIPsOnUpdate(spec, oldSpec)
  } else if (!unset(spec.clusterIP) && strings(spec.clusterIPs).length === 0) spec.clusterIPs = [spec.clusterIP as Json]
  if (needsClusterIP(spec)) {
    const refused = clusterIPsRelated(spec)
    if (refused.length === 0) refused.push(...singleStack(spec))
    if (refused.length > 0) return refused
    if (unset(spec.clusterIP)) {
      const first = strings(spec.clusterIPs)[0]
      if (first !== undefined && first !== '') spec.clusterIP = first
      else {
        const ip = allocate()
        spec.clusterIP = ip
        spec.clusterIPs = [ip]
      }
    }
    if (unset(spec.ipFamilyPolicy)) spec.ipFamilyPolicy = strings(spec.ipFamilies).length === 2 || strings(spec.clusterIPs).length === 2 ? 'RequireDualStack' : 'SingleStack'
    if (strings(spec.ipFamilies).length === 0) spec.ipFamilies = ['IPv4']
  }
  if (oldSpec && needsClusterIP(oldSpec) && !needsClusterIP(spec)) {
    // dropTypeDependentFields: what the old type needed goes, unless the request changed it.
    if (deepEqual(oldSpec.clusterIPs ?? [], spec.clusterIPs ?? [])) {
      delete spec.clusterIP
      delete spec.clusterIPs
    }
    if (deepEqual(oldSpec.ipFamilies ?? [], spec.ipFamilies ?? [])) delete spec.ipFamilies
    if (oldSpec.ipFamilyPolicy === spec.ipFamilyPolicy) delete spec.ipFamilyPolicy
    if (oldSpec.internalTrafficPolicy === spec.internalTrafficPolicy) delete spec.internalTrafficPolicy
  }
  return []
}

/** normalizeClusterIPs for an update: the singular field drives the plural one. */
function normalizeClusterIPsOnUpdate(spec: Spec, oldSpec: Spec): void {
  const oldIP = oldSpec.clusterIP ?? ''
  const newIP = spec.clusterIP ?? ''
  if (strings(oldSpec.clusterIPs).length > 0 && strings(spec.clusterIPs).length === 0 && oldIP === newIP) spec.clusterIPs = oldSpec.clusterIPs
  if (oldIP === newIP) return
  const same = deepEqual(strings(oldSpec.clusterIPs), strings(spec.clusterIPs))
  if (oldIP !== '' && newIP === '') {
    if (same) delete spec.clusterIPs
  } else if (same) spec.clusterIPs = [newIP as Json]
}

const ipMsg = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const dns1123LabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const subdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

/** `[]string` as Go marshals it: `null` when empty (nil). */
function goStrings(v: unknown): string {
  const s = strings(v)
  return s.length === 0 ? 'null' : goJson(s)
}

/** validateUpgradeDowngradeClusterIPs: the addresses may grow or shrink by the secondary, never change. */
function clusterIPsUpdate(spec: Spec, oldSpec: Spec): FieldCause[] {
  if (!needsClusterIP(spec) || !needsClusterIP(oldSpec)) return []
  if (isHeadless(spec) && isHeadless(oldSpec)) return []
  const oldIPs = strings(oldSpec.clusterIPs)
  const ips = strings(spec.clusterIPs)
  const value = goStrings(spec.clusterIPs)
  const out: FieldCause[] = []
  if (oldIPs.length === ips.length) {
    oldIPs.forEach((ip, i) => {
      if (ip !== ips[i]) out.push(invalid(`spec.clusterIPs[${i}]`, value, 'may not change once set'))
    })
  } else if (oldIPs.length > ips.length) {
    if (ips.length === 0) out.push(invalid('spec.clusterIPs[0]', value, 'primary clusterIP can not be unset'))
    if (oldIPs.length > 0 && ips.length > 0 && ips[0] !== oldIPs[0]) out.push(invalid('spec.clusterIPs[0]', value, 'may not change once set'))
    if (ips.length === 1 && spec.ipFamilyPolicy !== 'SingleStack') out.push(invalid('spec.ipFamilyPolicy', goValue(spec.ipFamilyPolicy ?? null), "must be set to 'SingleStack' when releasing the secondary clusterIP"))
  } else if (oldIPs.length > 0 && ips[0] !== oldIPs[0]) out.push(invalid('spec.clusterIPs[0]', value, 'may not change once set'))
  return out
}

/** validateUpgradeDowngradeIPFamilies: headless Services and changes to or from headless may change families. */
function ipFamiliesUpdate(spec: Spec, oldSpec: Spec): FieldCause[] {
  if (!needsClusterIP(spec) || !needsClusterIP(oldSpec)) return []
  if (isHeadless(spec) !== isHeadless(oldSpec) || isHeadless(spec)) return []
  const oldFamilies = strings(oldSpec.ipFamilies)
  const families = strings(spec.ipFamilies)
  const out: FieldCause[] = []
  if (oldFamilies.length === families.length) {
    // Upstream reports every changed entry at index 0.
    oldFamilies.forEach((f, i) => {
      if (f !== families[i]) out.push(invalid('spec.ipFamilies[0]', goStrings(spec.ipFamilies), 'may not change once set'))
    })
  } else if (oldFamilies.length > families.length) {
    if (strings(spec.clusterIPs).length === 0) out.push(invalid('spec.ipFamilies[0]', goStrings(spec.ipFamilies), 'primary ipFamily can not be unset'))
    if (families.length > 0 && families[0] !== oldFamilies[0]) out.push(invalid('spec.ipFamilies[0]', goStrings(spec.clusterIPs), 'may not change once set'))
    if (families.length === 1 && spec.ipFamilyPolicy !== 'SingleStack') out.push(invalid('spec.ipFamilyPolicy', goValue(spec.ipFamilyPolicy ?? null), "must be set to 'SingleStack' when releasing the secondary ipFamily"))
  } else if (oldFamilies.length > 0 && families.length > 0 && families[0] !== oldFamilies[0]) out.push(invalid('spec.ipFamilies[0]', goStrings(spec.clusterIPs), 'may not change once set'))
  return out
}

/** ValidateServiceClusterIPsRelatedFields. */
function clusterIPsRelated(spec: Spec): FieldCause[] {
  if (!needsClusterIP(spec)) return []
  const out: FieldCause[] = []
  const ips = strings(spec.clusterIPs)
  if (!unset(spec.clusterIP)) {
    if (ips.length === 0) out.push(required('spec.clusterIPs'))
    else if (ips[0] !== spec.clusterIP) out.push(invalid('spec.clusterIPs', goStrings(spec.clusterIPs), 'first value must match `clusterIP`'))
  } else if (ips.length > 0) out.push(invalid('spec.clusterIPs', goStrings(spec.clusterIPs), 'must be empty when `clusterIP` is not specified'))
  const seen = new Set<string>()
  strings(spec.ipFamilies).forEach((f, i) => {
    if (f !== 'IPv4' && f !== 'IPv6') out.push(notSupported(`spec.ipFamilies[${i}]`, q(f), ['IPv4', 'IPv6']))
    if (seen.has(f)) out.push(duplicate(`spec.ipFamilies[${i}]`, q(f)))
    seen.add(f)
  })
  const policy = spec.ipFamilyPolicy
  if (!unset(policy) && policy !== 'SingleStack' && policy !== 'PreferDualStack' && policy !== 'RequireDualStack')
    out.push(notSupported('spec.ipFamilyPolicy', goValue(policy), ['PreferDualStack', 'RequireDualStack', 'SingleStack']))
  let badIPs = false
  ips.forEach((ip, i) => {
    if (i === 0 && ip === 'None') {
      if (ips.length > 1) {
        badIPs = true
        out.push(invalid('spec.clusterIPs', goStrings(spec.clusterIPs), "'None' must be the first and only value"))
      }
      return
    }
    if (!isIPv4(ip) && !isIPv6(ip)) {
      badIPs = true
      out.push(invalid(`spec.clusterIPs[${i}]`, q(ip), ipMsg))
    }
  })
  if (ips.length > 2) out.push(invalid('spec.clusterIPs', goStrings(spec.clusterIPs), 'may only hold up to 2 values'))
  if (badIPs) return out
  if (ips.length > 1 && isIPv6(ips[0] ?? '') === isIPv6(ips[1] ?? '')) out.push(invalid('spec.clusterIPs', goStrings(spec.clusterIPs), 'may specify no more than one IP for each IP family'))
  const families = strings(spec.ipFamilies)
  if (!isHeadless(spec)) {
    ips.forEach((ip, i) => {
      if (i >= families.length) return
      if (families[i] === 'IPv4' && isIPv6(ip)) out.push(invalid(`spec.clusterIPs[${i}]`, q(ip), `expected an IPv4 value as indicated by \`ipFamilies[${i}]\``))
      if (families[i] === 'IPv6' && !isIPv6(ip)) out.push(invalid(`spec.clusterIPs[${i}]`, q(ip), `expected an IPv6 value as indicated by \`ipFamilies[${i}]\``))
    })
  }
  return out
}

/** What a single-stack IPv4 cluster's allocator refuses (storage/alloc.go initIPFamilyFields). */
function singleStack(spec: Spec): FieldCause[] {
  if (!needsClusterIP(spec)) return []
  const out: FieldCause[] = []
  strings(spec.ipFamilies).forEach((f, i) => {
    if (f === 'IPv6') out.push(invalid(`spec.ipFamilies[${i}]`, goStrings(spec.ipFamilies), `${f} is not configured on this cluster`))
  })
  if (spec.ipFamilyPolicy === 'RequireDualStack') out.push(invalid('spec.ipFamilyPolicy', goValue(spec.ipFamilyPolicy), 'this cluster is not configured for dual-stack services'))
  return out
}

/** The internal ServicePort as Go marshals it (no json tags): what a duplicate port prints. */
function goServicePort(p: Record<string, unknown>): string {
  return goJson(struct({ Name: '', Protocol: p.protocol ?? '', AppProtocol: null, Port: p.port ?? 0, TargetPort: 0, NodePort: 0 }))
}

/** ValidateService, plus ValidateServiceUpdate's rules when `old` is given. */
export function validateService(svc: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const spec = isObj(svc.spec) ? (svc.spec as Spec) : {}
  const out: FieldCause[] = []
  if (old) {
    const oldSpec = isObj(old.spec) ? (old.spec as Spec) : {}
    out.push(...clusterIPsUpdate(spec, oldSpec), ...ipFamiliesUpdate(spec, oldSpec))
  }
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObj) : []
  const headless = isHeadless(spec)
  if (ports.length === 0 && !headless && spec.type !== 'ExternalName') out.push(required('spec.ports'))
  if ((spec.type === 'LoadBalancer' || spec.type === 'NodePort') && headless) out.push(invalid('spec.clusterIPs[0]', q('None'), `may not be set to 'None' for ${spec.type} services`))
  if (spec.type === 'ExternalName') {
    if (strings(spec.clusterIPs).length > 0) out.push(forbiddenField('spec.clusterIPs', 'may not be set for ExternalName services'))
    if (strings(spec.ipFamilies).length > 0) out.push(forbiddenField('spec.ipFamilies', 'may not be set for ExternalName services'))
    if (!unset(spec.ipFamilyPolicy)) out.push(forbiddenField('spec.ipFamilyPolicy', 'may not be set for ExternalName services'))
    const cname = String(spec.externalName ?? '').replace(/\.$/, '')
    if (cname === '') out.push(required('spec.externalName'))
    else if (cname.length > 253) out.push(invalid('spec.externalName', q(cname), 'must be no more than 253 characters'))
    else if (!subdomain.test(cname)) out.push(invalid('spec.externalName', q(cname), subdomainMsg))
  }
  const names = new Set<string>()
  ports.forEach((p, i) => {
    const path = `spec.ports[${i}]`
    const name = typeof p.name === 'string' ? p.name : ''
    if (ports.length > 1 && name === '') out.push(required(`${path}.name`))
    else if (name !== '') {
      if (name.length > 63) out.push(invalid(`${path}.name`, q(name), 'must be no more than 63 characters'))
      else if (!dns1123Label.test(name)) out.push(invalid(`${path}.name`, q(name), dns1123LabelMsg))
      if (names.has(name)) out.push(duplicate(`${path}.name`, q(name)))
      names.add(name)
    }
    const n = p.port
    if (typeof n !== 'number' || n < 1 || n > 65535) out.push(invalid(`${path}.port`, String(n ?? 0), 'must be between 1 and 65535, inclusive'))
    if (unset(p.protocol)) out.push(required(`${path}.protocol`))
    else if (p.protocol !== 'TCP' && p.protocol !== 'UDP' && p.protocol !== 'SCTP') out.push(notSupported(`${path}.protocol`, goValue(p.protocol), ['SCTP', 'TCP', 'UDP']))
  })
  if (isObj(spec.selector)) out.push(...validateLabels('spec.selector', spec.selector))
  out.push(...clusterIPsRelated(spec))
  const types = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort']
  if (unset(spec.type)) out.push(required('spec.type'))
  else if (!types.includes(String(spec.type))) out.push(notSupported('spec.type', goValue(spec.type), types))
  const seen = new Set<string>()
  ports.forEach((p, i) => {
    const key = `${String(p.protocol ?? '')}/${String(p.port ?? 0)}`
    if (seen.has(key)) out.push(duplicate(`spec.ports[${i}]`, goServicePort(p)))
    seen.add(key)
  })
  return out
}
