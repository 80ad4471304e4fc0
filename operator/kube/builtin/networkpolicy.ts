/**
 * `networking.k8s.io/v1` NetworkPolicies as kube-apiserver 1.34 stores them: defaulted as
 * pkg/apis/networking/v1/defaults.go does (`SetDefaults_NetworkPolicyPort`,
 * `SetDefaults_NetworkPolicy`), serialized as the Go types are (a non-pointer `spec` and
 * `spec.podSelector` are always written, empty `omitempty` lists are not), and validated as
 * pkg/apis/networking/validation/validation.go does (`ValidateNetworkPolicySpec`,
 * `ValidateNetworkPolicyPort`, `ValidateNetworkPolicyPeer`, `ValidateIPBlock`), with the
 * StrictIPCIDRValidation gate off as in a default 1.34 cluster. The sandbox has no network:
 * policies are stored and served, never enforced.
 */
import { isValidPortName, isValidPortNum } from '../names.ts'
import type { FieldCause, JsonObject, KubeObject } from '../object.ts'
import { forbiddenField, goJson, invalid, isObj, notSupported, q, required } from './field.ts'
import { validateLabelSelector } from './meta.ts'

/** Drops `key` when it is an empty list: Go's `omitempty` on a slice. */
function dropEmpty(o: Record<string, unknown>, key: string): void {
  const v = o[key]
  if (Array.isArray(v) && v.length === 0) delete o[key]
}

/** A metav1.LabelSelector after Go's round trip: empty `matchLabels`, `matchExpressions`, `values` omitted. */
function normalizeSelector(sel: unknown): void {
  if (!isObj(sel)) return
  if (isObj(sel.matchLabels) && Object.keys(sel.matchLabels).length === 0) delete sel.matchLabels
  dropEmpty(sel, 'matchExpressions')
  if (Array.isArray(sel.matchExpressions)) for (const e of sel.matchExpressions) if (isObj(e)) dropEmpty(e, 'values')
}

/** Defaults (and normalizes as the Go types would) a NetworkPolicy in place. */
export function defaultNetworkPolicy(o: JsonObject): void {
  if (!isObj(o.spec)) o.spec = {}
  const spec = o.spec as JsonObject
  // NetworkPolicySpec.PodSelector is a metav1.LabelSelector, not a pointer: always serialized.
  if (!isObj(spec.podSelector)) spec.podSelector = {}
  normalizeSelector(spec.podSelector)
  for (const [rules, peers] of [
    ['ingress', 'from'],
    ['egress', 'to'],
  ] as const) {
    dropEmpty(spec, rules)
    const list = spec[rules]
    if (!Array.isArray(list)) continue
    for (const rule of list) {
      if (!isObj(rule)) continue
      dropEmpty(rule, 'ports')
      dropEmpty(rule, peers)
      // SetDefaults_NetworkPolicyPort: only a nil protocol becomes TCP (an empty one is invalid).
      if (Array.isArray(rule.ports)) for (const p of rule.ports) if (isObj(p) && (p.protocol === undefined || p.protocol === null)) p.protocol = 'TCP'
      if (!Array.isArray(rule[peers])) continue
      for (const peer of rule[peers]) {
        if (!isObj(peer)) continue
        normalizeSelector(peer.podSelector)
        normalizeSelector(peer.namespaceSelector)
        if (isObj(peer.ipBlock)) dropEmpty(peer.ipBlock, 'except')
      }
    }
  }
  // SetDefaults_NetworkPolicy: "Ingress", plus "Egress" when there are egress rules.
  if (!Array.isArray(spec.policyTypes) || spec.policyTypes.length === 0) {
    spec.policyTypes = Array.isArray(spec.egress) && spec.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress']
  }
}

/** An address as k8s.io/utils/net `ParseCIDRSloppy` holds it: 4 or 16 bytes. */
type Bytes = number[]

/** k8s.io/utils/net's forked `dtoi`: decimal digits (leading zeros allowed), at least one. */
function dtoi(s: string): { n: number; len: number } | undefined {
  const m = /^[0-9]+/.exec(s)
  if (!m) return undefined
  const n = Number(m[0])
  return n >= 0xffffff ? undefined : { n, len: m[0].length }
}

/** The sloppy `parseIPv4`: four decimal octets, leading zeros allowed. */
function parseIPv4(s: string): Bytes | undefined {
  const parts = s.split('.')
  if (parts.length !== 4) return undefined
  const out: Bytes = []
  for (const p of parts) {
    const d = dtoi(p)
    if (!d || d.len !== p.length || d.n > 0xff) return undefined
    out.push(d.n)
  }
  return out
}

/** `parseIPv6`: hex groups up to 0xFFFF, at most one `::` (standing for at least one group), an optional IPv4 tail; no zone. */
function parseIPv6(s: string): Bytes | undefined {
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const groups = (h: string, last: boolean): Bytes | undefined => {
    if (h === '') return []
    const out: Bytes = []
    const parts = h.split(':')
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string
      if (last && i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p)
        if (!v4) return undefined
        out.push(...v4)
      } else {
        // xtoi: any number of hex digits (so leading zeros beyond four), at most 0xFFFF.
        const n = /^[0-9a-fA-F]+$/.test(p) ? parseInt(p, 16) : Number.NaN
        if (!(n <= 0xffff)) return undefined
        out.push(n >> 8, n & 0xff)
      }
    }
    return out
  }
  if (halves.length === 1) {
    const all = groups(s, true)
    return all && all.length === 16 ? all : undefined
  }
  const head = groups(halves[0] as string, false)
  const tail = groups(halves[1] as string, true)
  if (!head || !tail || head.length + tail.length > 14) return undefined
  return [...head, ...new Array<number>(16 - head.length - tail.length).fill(0), ...tail]
}

interface Net {
  /** The network's address, masked: 4 bytes for an IPv4 CIDR, 16 for IPv6. */
  ip: Bytes
  /** The prefix length, counted in `ip`'s bits. */
  ones: number
}

/** k8s.io/utils/net `ParseCIDRSloppy`: undefined where it fails. */
export function parseCIDRSloppy(s: string): Net | undefined {
  const slash = s.indexOf('/')
  if (slash < 0) return undefined
  const addr = s.slice(0, slash)
  const mask = s.slice(slash + 1)
  const ip = parseIPv4(addr) ?? parseIPv6(addr)
  const d = dtoi(mask)
  if (!ip || !d || d.len !== mask.length || d.n > ip.length * 8) return undefined
  return { ip: ip.map((b, i) => b & (0xff << Math.max(0, Math.min(8, (i + 1) * 8 - d.n))) & 0xff), ones: d.n }
}

/** An IPv4-mapped IPv6 address as its 4 bytes (Go's `IP.To4`), else unchanged. */
function to4(ip: Bytes): Bytes {
  return ip.length === 16 && ip.slice(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff ? ip.slice(12) : ip
}

/** Go's `(*net.IPNet).Contains`, including its handling of IPv4-mapped addresses. */
function contains(net: Net, ip: Bytes): boolean {
  const nn = to4(net.ip)
  let ones = net.ones
  if (nn.length === 4 && net.ip.length === 16) ones -= 96
  if (ones < 0) ones = 0
  const x = to4(ip)
  if (x.length !== nn.length) return false
  for (let i = 0; i < x.length; i++) {
    const m = 0xff & (0xff << Math.max(0, Math.min(8, (i + 1) * 8 - ones)))
    if (((nn[i] as number) & m) !== ((x[i] as number) & m)) return false
  }
  return true
}

const cidrMessage = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'

/** ValidateIPBlock: a CIDR that parses, and excepts that are strict subsets of it. */
function validateIPBlock(field: string, ipb: Record<string, unknown>): FieldCause[] {
  const cidr = typeof ipb.cidr === 'string' ? ipb.cidr : ''
  if (cidr === '') return [required(`${field}.cidr`)]
  const net = parseCIDRSloppy(cidr)
  if (!net) return [invalid(`${field}.cidr`, q(cidr), cidrMessage)]
  const out: FieldCause[] = []
  const excepts = Array.isArray(ipb.except) ? ipb.except : []
  excepts.forEach((e, i) => {
    const s = String(e)
    const p = `${field}.except[${i}]`
    const ex = parseCIDRSloppy(s)
    if (!ex) {
      out.push(invalid(p, q(s), cidrMessage))
      return
    }
    if (!contains(net, ex.ip) || net.ones >= ex.ones) out.push(invalid(p, q(s), 'must be a strict subset of `cidr`'))
  })
  return out
}

/** ValidateNetworkPolicyPeer: podSelector and/or namespaceSelector, or an ipBlock alone. */
function validatePeer(field: string, peer: Record<string, unknown>): FieldCause[] {
  const out: FieldCause[] = []
  let peers = 0
  if (isObj(peer.podSelector)) {
    peers++
    out.push(...validateLabelSelector(`${field}.podSelector`, peer.podSelector))
  }
  if (isObj(peer.namespaceSelector)) {
    peers++
    out.push(...validateLabelSelector(`${field}.namespaceSelector`, peer.namespaceSelector))
  }
  if (isObj(peer.ipBlock)) {
    peers++
    out.push(...validateIPBlock(`${field}.ipBlock`, peer.ipBlock))
  }
  if (peers === 0) out.push(required(field, 'must specify a peer'))
  else if (peers > 1 && isObj(peer.ipBlock)) out.push(forbiddenField(field, 'may not specify both ipBlock and another peer'))
  return out
}

const protocols = ['TCP', 'UDP', 'SCTP']

/** ValidateNetworkPolicyPort: protocol, a port number or IANA_SVC_NAME, and endPort's rules. */
function validatePort(field: string, port: Record<string, unknown>): FieldCause[] {
  const out: FieldCause[] = []
  const protocol = port.protocol
  if (protocol !== undefined && protocol !== null && !protocols.includes(String(protocol))) out.push(notSupported(`${field}.protocol`, q(String(protocol)), protocols))
  const p = port.port
  const end = typeof port.endPort === 'number' ? port.endPort : undefined
  if (typeof p === 'number') {
    for (const m of isValidPortNum(p)) out.push(invalid(`${field}.port`, String(p), m))
    if (end !== undefined) {
      if (end < p) out.push(invalid(`${field}.endPort`, String(end), 'must be greater than or equal to `port`'))
      for (const m of isValidPortNum(end)) out.push(invalid(`${field}.endPort`, String(end), m))
    }
  } else if (typeof p === 'string') {
    if (end !== undefined) out.push(invalid(`${field}.endPort`, String(end), 'may not be specified when `port` is non-numeric'))
    for (const m of isValidPortName(p)) out.push(invalid(`${field}.port`, q(p), m))
  } else if (end !== undefined) out.push(invalid(`${field}.endPort`, String(end), 'may not be specified when `port` is not specified'))
  return out
}

const policyTypes = ['Ingress', 'Egress']

/**
 * ValidateNetworkPolicySpec, in its order: podSelector, each ingress rule's ports then peers,
 * each egress rule's, then policyTypes (more than two is refused outright; repeats within two
 * are accepted, as upstream accepts them).
 */
export function validateNetworkPolicy(obj: KubeObject): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out = validateLabelSelector('spec.podSelector', spec.podSelector)
  for (const [rules, peers] of [
    ['ingress', 'from'],
    ['egress', 'to'],
  ] as const) {
    const list = Array.isArray(spec[rules]) ? spec[rules] : []
    list.forEach((rule, i) => {
      const r = isObj(rule) ? rule : {}
      const rf = `spec.${rules}[${i}]`
      const ports = Array.isArray(r.ports) ? r.ports : []
      ports.forEach((p, j) => out.push(...validatePort(`${rf}.ports[${j}]`, isObj(p) ? p : {})))
      const ps = Array.isArray(r[peers]) ? (r[peers] as unknown[]) : []
      ps.forEach((p, j) => out.push(...validatePeer(`${rf}.${peers}[${j}]`, isObj(p) ? p : {})))
    })
  }
  const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : []
  if (types.length > policyTypes.length) {
    out.push(invalid('spec.policyTypes', goJson(types), 'may not specify more than two policyTypes'))
    return out
  }
  types.forEach((t, i) => {
    if (!policyTypes.includes(String(t))) out.push(notSupported(`spec.policyTypes[${i}]`, q(String(t)), policyTypes))
  })
  return out
}
