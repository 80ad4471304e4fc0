/**
 * Pod Security Admission as kube-apiserver 1.34 runs it (k8s.io/pod-security-admission):
 * the namespace's `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels choose a
 * level; a Pod that violates the enforce level is refused with 403
 * `pods "x" is forbidden: violates PodSecurity "restricted:latest": …`; a Pod or a workload's
 * pod template that violates the warn level gets a `Warning` header
 * `would violate PodSecurity "restricted:latest": …` (workloads are never refused). The checks
 * and their messages are transcribed from policy/check_*.go, in the order the check registry
 * runs them (baseline IDs sorted, then restricted IDs sorted), at their 1.34 versions.
 */
import { forbidden, invalid as invalidError, type StatusError } from '../errors.ts'
import type { FieldCause, KubeObject, ResourceType } from '../types.ts'
import { invalid, isObj, q } from '../../kube/builtin/field.ts'

type Obj = Record<string, unknown>
type Level = 'privileged' | 'baseline' | 'restricted'
/** A policy version: a minor of 1.x, or Infinity for "latest". */
interface LevelVersion {
  level: Level
  minor: number
  /** As the label spelled it: `latest` or `v1.30`. */
  version: string
}

/** The newest policy version this server knows; later versions evaluate as it (check registry maxVersion). */
const maxMinor = 34

interface Result {
  reason: string
  detail: string
}

type Check = (meta: Obj, spec: Obj) => Result | undefined

const obj = (v: unknown): Obj => (isObj(v) ? v : {})
const joinQuote = (items: string[]): string => (items.length === 0 ? '' : `"${items.join('", "')}"`)
const plural = (singular: string, pluralForm: string, n: number): string => (n === 1 ? singular : pluralForm)
const sorted = (s: Set<string>): string[] => [...s].sort()

/** visitContainers: init containers, containers, ephemeral containers. */
function visit(spec: Obj, fn: (c: Obj) => void): void {
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    const list = spec[key]
    if (Array.isArray(list)) for (const c of list) if (isObj(c)) fn(c)
  }
}

const name = (c: Obj): string => String(c.name ?? '')
const sc = (c: Obj): Obj => obj(c.securityContext)
const isWindows = (spec: Obj): boolean => obj(spec.os).name === 'windows'

function containersMust(bad: string[], what: string, reason: string): Result | undefined {
  if (bad.length === 0) return undefined
  return { reason, detail: `${plural('container', 'containers', bad.length)} ${joinQuote(bad)} ${what}` }
}

/** badSetters ("pod", `containers "a", "b"`) joined with " and ". */
function setters(pod: boolean, containers: string[]): string[] {
  const out = pod ? ['pod'] : []
  if (containers.length > 0) out.push(`${plural('container', 'containers', containers.length)} ${joinQuote(containers)}`)
  return out
}

// ---------------------------------------------------------------- baseline

const appArmorProfile: Check = (meta, spec) => {
  const allowedType = (t: unknown) => t === 'RuntimeDefault' || t === 'Localhost'
  const badValues = new Set<string>()
  const podProfile = obj(spec.securityContext).appArmorProfile
  const podBad = isObj(podProfile) && !allowedType(podProfile.type)
  if (podBad && isObj(podProfile)) badValues.add(String(podProfile.type ?? ''))
  const bad: string[] = []
  visit(spec, (c) => {
    const p = sc(c).appArmorProfile
    if (isObj(p) && !allowedType(p.type)) {
      bad.push(name(c))
      badValues.add(String(p.type ?? ''))
    }
  })
  const badSetters = setters(podBad, bad)
  const annotations: string[] = []
  for (const [k, v] of Object.entries(obj(meta.annotations))) {
    const value = String(v)
    if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') && !(value === '' || value === 'runtime/default' || value.startsWith('localhost/'))) annotations.push(`${k}=${q(value)}`)
  }
  const values = sorted(badValues)
  if (annotations.length > 0) {
    values.push(...annotations.sort())
    badSetters.push(plural('annotation', 'annotations', annotations.length))
  }
  if (badSetters.length === 0) return undefined
  return { reason: plural('forbidden AppArmor profile', 'forbidden AppArmor profiles', values.length), detail: `${badSetters.join(' and ')} must not set AppArmor profile type to ${joinQuote(values)}` }
}

const baselineCapabilities = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'])

const capabilitiesBaseline: Check = (_meta, spec) => {
  const bad: string[] = []
  const caps = new Set<string>()
  visit(spec, (c) => {
    const add = obj(sc(c).capabilities).add
    let valid = true
    for (const cap of Array.isArray(add) ? add.map(String) : []) {
      if (!baselineCapabilities.has(cap)) {
        valid = false
        caps.add(cap)
      }
    }
    if (!valid) bad.push(name(c))
  })
  return containersMust(bad, `must not include ${joinQuote(sorted(caps))} in securityContext.capabilities.add`, 'non-default capabilities')
}

const hostNamespaces: Check = (_meta, spec) => {
  const used = [['hostNetwork', spec.hostNetwork], ['hostPID', spec.hostPID], ['hostIPC', spec.hostIPC]].filter(([, v]) => v === true).map(([k]) => `${String(k)}=true`)
  return used.length > 0 ? { reason: 'host namespaces', detail: used.join(', ') } : undefined
}

const hostPathVolumes: Check = (_meta, spec) => {
  const vols = (Array.isArray(spec.volumes) ? spec.volumes : []).filter((v) => isObj(v) && isObj(v.hostPath)).map((v) => String(obj(v).name ?? ''))
  return vols.length > 0 ? { reason: 'hostPath volumes', detail: `${plural('volume', 'volumes', vols.length)} ${joinQuote(vols)}` } : undefined
}

const hostPorts: Check = (_meta, spec) => {
  const bad: string[] = []
  const ports = new Set<string>()
  visit(spec, (c) => {
    let valid = true
    for (const p of Array.isArray(c.ports) ? c.ports : []) {
      const hp = obj(p).hostPort
      if (typeof hp === 'number' && hp !== 0) {
        valid = false
        ports.add(String(hp))
      }
    }
    if (!valid) bad.push(name(c))
  })
  if (bad.length === 0) return undefined
  return { reason: 'hostPort', detail: `${plural('container', 'containers', bad.length)} ${joinQuote(bad)} ${plural('uses', 'use', bad.length)} ${plural('hostPort', 'hostPorts', ports.size)} ${sorted(ports).join(', ')}` }
}

const hostProbesAndHostLifecycle: Check = (_meta, spec) => {
  const bad = new Set<string>()
  const hosts = new Set<string>()
  const check = (c: Obj, handler: unknown): void => {
    const h = obj(handler)
    for (const key of ['httpGet', 'tcpSocket']) {
      const host = obj(h[key]).host
      if (typeof host === 'string' && host !== '') {
        bad.add(name(c))
        hosts.add(host)
      }
    }
  }
  visit(spec, (c) => {
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) check(c, c[probe])
    const lc = obj(c.lifecycle)
    check(c, lc.postStart)
    check(c, lc.preStop)
  })
  if (bad.size === 0) return undefined
  return { reason: 'probe or lifecycle host', detail: `${plural('container', 'containers', bad.size)} ${joinQuote(sorted(bad))} ${plural('uses', 'use', bad.size)} ${plural('probe or lifecycle host', 'probe or lifecycle hosts', hosts.size)} ${joinQuote(sorted(hosts))}` }
}

const privileged: Check = (_meta, spec) => {
  const bad: string[] = []
  visit(spec, (c) => {
    if (sc(c).privileged === true) bad.push(name(c))
  })
  return containersMust(bad, 'must not set securityContext.privileged=true', 'privileged')
}

const procMount: Check = (_meta, spec) => {
  const bad: string[] = []
  const types = new Set<string>()
  visit(spec, (c) => {
    const pm = sc(c).procMount
    if (pm !== undefined && pm !== null && pm !== 'Default') {
      bad.push(name(c))
      types.add(String(pm))
    }
  })
  return containersMust(bad, `must not set securityContext.procMount to ${joinQuote(sorted(types))}`, 'procMount')
}

const validSeccomp = (t: unknown): boolean => t === 'RuntimeDefault' || t === 'Localhost'

/** Seccomp profile types set to something else than RuntimeDefault or Localhost, pod and containers. */
function badSeccomp(spec: Obj): { badSetters: string[]; values: string[]; podSet: boolean; implicit: string[] } {
  const values = new Set<string>()
  const podProfile = obj(spec.securityContext).seccompProfile
  let podBad = false
  let podSet = false
  if (isObj(podProfile)) {
    if (!validSeccomp(podProfile.type)) {
      podBad = true
      values.add(String(podProfile.type ?? ''))
    } else podSet = true
  }
  const explicit: string[] = []
  const implicit: string[] = []
  visit(spec, (c) => {
    const p = sc(c).seccompProfile
    if (isObj(p)) {
      if (!validSeccomp(p.type)) {
        explicit.push(name(c))
        values.add(String(p.type ?? ''))
      }
    } else if (!podSet) implicit.push(name(c))
  })
  return { badSetters: setters(podBad, explicit), values: sorted(values), podSet, implicit }
}

const seccompProfileBaseline: Check = (_meta, spec) => {
  const { badSetters, values } = badSeccomp(spec)
  if (badSetters.length === 0) return undefined
  return { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(values)}` }
}

const selinuxTypes = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'])

const seLinuxOptions: Check = (_meta, spec) => {
  const badTypes = new Set<string>()
  let setUser = false
  let setRole = false
  const valid = (o: Obj): boolean => {
    let ok = true
    const t = String(o.type ?? '')
    if (!selinuxTypes.has(t)) {
      ok = false
      badTypes.add(t)
    }
    if (typeof o.user === 'string' && o.user !== '') {
      ok = false
      setUser = true
    }
    if (typeof o.role === 'string' && o.role !== '') {
      ok = false
      setRole = true
    }
    return ok
  }
  const podOpts = obj(spec.securityContext).seLinuxOptions
  const podBad = isObj(podOpts) && !valid(podOpts)
  const bad: string[] = []
  visit(spec, (c) => {
    const o = sc(c).seLinuxOptions
    if (isObj(o) && !valid(o)) bad.push(name(c))
  })
  const badSetters = setters(podBad, bad)
  if (badSetters.length === 0) return undefined
  const data: string[] = []
  if (badTypes.size > 0) data.push(`${plural('type', 'types', badTypes.size)} ${joinQuote(sorted(badTypes))}`)
  if (setUser) data.push('user may not be set')
  if (setRole) data.push('role may not be set')
  return { reason: 'seLinuxOptions', detail: `${badSetters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}` }
}

const allowedSysctls = new Set([
  'kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
])

const sysctls: Check = (_meta, spec) => {
  const list = obj(spec.securityContext).sysctls
  const bad = (Array.isArray(list) ? list : []).map((s) => String(obj(s).name ?? '')).filter((n) => !allowedSysctls.has(n))
  return bad.length > 0 ? { reason: 'forbidden sysctls', detail: bad.join(', ') } : undefined
}

const windowsHostProcess: Check = (_meta, spec) => {
  const bad: string[] = []
  visit(spec, (c) => {
    if (obj(sc(c).windowsOptions).hostProcess === true) bad.push(name(c))
  })
  const badSetters = setters(obj(obj(spec.securityContext).windowsOptions).hostProcess === true, bad)
  return badSetters.length > 0 ? { reason: 'hostProcess', detail: `${badSetters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true` } : undefined
}

// ---------------------------------------------------------------- restricted

const allowPrivilegeEscalation: Check = (_meta, spec) => {
  if (isWindows(spec)) return undefined
  const bad: string[] = []
  visit(spec, (c) => {
    if (sc(c).allowPrivilegeEscalation !== false) bad.push(name(c))
  })
  return containersMust(bad, 'must set securityContext.allowPrivilegeEscalation=false', 'allowPrivilegeEscalation != false')
}

const capabilitiesRestricted: Check = (_meta, spec) => {
  if (isWindows(spec)) return undefined
  const missingDropAll: string[] = []
  const adding: string[] = []
  const caps = new Set<string>()
  visit(spec, (c) => {
    const capabilities = sc(c).capabilities
    if (!isObj(capabilities)) {
      missingDropAll.push(name(c))
      return
    }
    const drop = Array.isArray(capabilities.drop) ? capabilities.drop.map(String) : []
    if (!drop.includes('ALL')) missingDropAll.push(name(c))
    let addedForbidden = false
    for (const cap of Array.isArray(capabilities.add) ? capabilities.add.map(String) : []) {
      if (cap !== 'NET_BIND_SERVICE') {
        addedForbidden = true
        caps.add(cap)
      }
    }
    if (addedForbidden) adding.push(name(c))
  })
  const details: string[] = []
  if (missingDropAll.length > 0) details.push(`${plural('container', 'containers', missingDropAll.length)} ${joinQuote(missingDropAll)} must set securityContext.capabilities.drop=["ALL"]`)
  if (adding.length > 0) details.push(`${plural('container', 'containers', adding.length)} ${joinQuote(adding)} must not include ${joinQuote(sorted(caps))} in securityContext.capabilities.add`)
  return details.length > 0 ? { reason: 'unrestricted capabilities', detail: details.join('; ') } : undefined
}

const restrictedVolumeSources = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret']
const namedVolumeTypes: [string, string][] = [
  ['hostPath', 'hostPath'], ['gcePersistentDisk', 'gcePersistentDisk'], ['awsElasticBlockStore', 'awsElasticBlockStore'], ['gitRepo', 'gitRepo'], ['nfs', 'nfs'],
  ['iscsi', 'iscsi'], ['glusterfs', 'glusterfs'], ['rbd', 'rbd'], ['flexVolume', 'flexVolume'], ['cinder', 'cinder'], ['cephfs', 'cephfs'], ['flocker', 'flocker'],
  ['fc', 'fc'], ['azureFile', 'azureFile'], ['vsphereVolume', 'vsphereVolume'], ['quobyte', 'quobyte'], ['azureDisk', 'azureDisk'],
  ['photonPersistentDisk', 'photonPersistentDisk'], ['portworxVolume', 'portworxVolume'], ['scaleIO', 'scaleIO'], ['storageos', 'storageos'],
]

const restrictedVolumes: Check = (_meta, spec) => {
  const bad: string[] = []
  const types = new Set<string>()
  for (const v of Array.isArray(spec.volumes) ? spec.volumes.filter(isObj) : []) {
    if (restrictedVolumeSources.some((k) => isObj(v[k]))) continue
    bad.push(String(v.name ?? ''))
    types.add(namedVolumeTypes.find(([k]) => isObj(v[k]))?.[1] ?? 'unknown')
  }
  if (bad.length === 0) return undefined
  return {
    reason: 'restricted volume types',
    detail: `${plural('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${plural('uses', 'use', bad.length)} ${plural('restricted volume type', 'restricted volume types', types.size)} ${joinQuote(sorted(types))}`,
  }
}

const runAsNonRoot: Check = (_meta, spec) => {
  const podValue = obj(spec.securityContext).runAsNonRoot
  const podFalse = podValue === false
  const podTrue = podValue === true
  const explicit: string[] = []
  const implicit: string[] = []
  visit(spec, (c) => {
    const v = sc(c).runAsNonRoot
    if (typeof v === 'boolean') {
      if (!v) explicit.push(name(c))
    } else if (!podTrue) implicit.push(name(c))
  })
  const badSetters = setters(podFalse, explicit)
  if (badSetters.length > 0) return { reason: 'runAsNonRoot != true', detail: `${badSetters.join(' and ')} must not set securityContext.runAsNonRoot=false` }
  if (implicit.length > 0) return { reason: 'runAsNonRoot != true', detail: `pod or ${plural('container', 'containers', implicit.length)} ${joinQuote(implicit)} must set securityContext.runAsNonRoot=true` }
  return undefined
}

const runAsUser: Check = (_meta, spec) => {
  const bad: string[] = []
  visit(spec, (c) => {
    if (sc(c).runAsUser === 0) bad.push(name(c))
  })
  const badSetters = setters(obj(spec.securityContext).runAsUser === 0, bad)
  return badSetters.length > 0 ? { reason: 'runAsUser=0', detail: `${badSetters.join(' and ')} must not set runAsUser=0` } : undefined
}

const seccompProfileRestricted: Check = (_meta, spec) => {
  if (isWindows(spec)) return undefined
  const { badSetters, values, implicit } = badSeccomp(spec)
  if (badSetters.length > 0) return { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(values)}` }
  if (implicit.length > 0) return { reason: 'seccompProfile', detail: `pod or ${plural('container', 'containers', implicit.length)} ${joinQuote(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"` }
  return undefined
}

interface CheckDef {
  id: string
  level: 'baseline' | 'restricted'
  /** The minor version the check starts at (versions before it skip it). */
  since: number
  check: Check
  /** Baseline checks this restricted check replaces. */
  overrides?: string[]
}

/** The registry for 1.34; within a level, IDs sort as Go sorts them (byte order). */
const checks: CheckDef[] = ([
  { id: 'appArmorProfile', level: 'baseline', since: 0, check: appArmorProfile },
  { id: 'capabilities_baseline', level: 'baseline', since: 0, check: capabilitiesBaseline },
  { id: 'hostNamespaces', level: 'baseline', since: 0, check: hostNamespaces },
  { id: 'hostPathVolumes', level: 'baseline', since: 0, check: hostPathVolumes },
  { id: 'hostPorts', level: 'baseline', since: 0, check: hostPorts },
  { id: 'hostProbesAndHostLifecycle', level: 'baseline', since: 34, check: hostProbesAndHostLifecycle },
  { id: 'privileged', level: 'baseline', since: 0, check: privileged },
  { id: 'procMount', level: 'baseline', since: 0, check: procMount },
  { id: 'seLinuxOptions', level: 'baseline', since: 0, check: seLinuxOptions },
  { id: 'seccompProfile_baseline', level: 'baseline', since: 19, check: seccompProfileBaseline },
  { id: 'sysctls', level: 'baseline', since: 0, check: sysctls },
  { id: 'windowsHostProcess', level: 'baseline', since: 0, check: windowsHostProcess },
  { id: 'allowPrivilegeEscalation', level: 'restricted', since: 8, check: allowPrivilegeEscalation },
  { id: 'capabilities_restricted', level: 'restricted', since: 22, check: capabilitiesRestricted, overrides: ['capabilities_baseline'] },
  { id: 'restrictedVolumes', level: 'restricted', since: 0, check: restrictedVolumes, overrides: ['hostPathVolumes'] },
  { id: 'runAsNonRoot', level: 'restricted', since: 0, check: runAsNonRoot },
  { id: 'runAsUser', level: 'restricted', since: 23, check: runAsUser },
  { id: 'seccompProfile_restricted', level: 'restricted', since: 19, check: seccompProfileRestricted, overrides: ['seccompProfile_baseline'] },
] satisfies CheckDef[]).sort((a, b) => (a.level === b.level ? (a.id < b.id ? -1 : 1) : a.level === 'baseline' ? -1 : 1))

/**
 * The failed checks of a pod at a level and version, aggregated as AggregateCheckResult's
 * ForbiddenDetail: `reason (detail), reason (detail)`; empty when allowed. Versions before a
 * check's first version skip it; the seccomp check before 1.19 and the older variants of the
 * sysctl and SELinux allow-lists are not modelled (they evaluate as 1.34).
 */
export function evaluatePod(lv: LevelVersion, meta: Obj, spec: Obj): string {
  if (lv.level === 'privileged') return ''
  const minor = Math.min(lv.minor, maxMinor)
  const active = checks.filter((c) => c.since <= minor && (lv.level === 'restricted' || c.level === 'baseline'))
  const overridden = new Set(lv.level === 'restricted' ? active.flatMap((c) => c.overrides ?? []) : [])
  const failed = active.filter((c) => !overridden.has(c.id)).map((c) => c.check(meta, spec)).filter((r): r is Result => r !== undefined)
  return failed.map((r) => (r.detail === '' ? r.reason : `${r.reason} (${r.detail})`)).join(', ')
}

const prefix = 'pod-security.kubernetes.io/'

function parseLevel(v: string): Level | undefined {
  return v === 'privileged' || v === 'baseline' || v === 'restricted' ? v : undefined
}

function parseVersion(v: string): number | undefined {
  if (v === 'latest') return Infinity
  const m = /^v1\.(0|[1-9][0-9]*)$/.exec(v)
  return m ? Number(m[1]) : undefined
}

const strictness: Record<Level, number> = { privileged: 0, baseline: 1, restricted: 2 }

/** The namespace's policy (api.PolicyToEvaluate) and the label errors, as field causes. */
export function policyOf(labels: Record<string, string> | undefined): { enforce: LevelVersion; audit: LevelVersion; warn: LevelVersion; errors: FieldCause[] } {
  const errors: FieldCause[] = []
  const latest = (): LevelVersion => ({ level: 'privileged', minor: Infinity, version: 'latest' })
  const p = { enforce: latest(), audit: latest(), warn: latest() }
  const l = labels ?? {}
  const levelMsg = 'must be one of privileged, baseline, restricted'
  const versionMsg = 'must be "latest" or "v1.x"'
  let hasEnforce = false
  let hasWarnLevel = false
  let hasWarnVersion = false
  for (const mode of ['enforce', 'audit', 'warn'] as const) {
    const level = l[`${prefix}${mode}`]
    if (level !== undefined) {
      const parsed = parseLevel(level)
      if (!parsed) errors.push(invalid(`metadata.labels[${prefix}${mode}]`, q(level), levelMsg))
      // Unparseable: enforce fails closed (restricted), audit and warn fail open.
      p[mode].level = parsed ?? (mode === 'enforce' ? 'restricted' : 'privileged')
      if (mode === 'enforce') hasEnforce = parsed !== undefined
      if (mode === 'warn') hasWarnLevel = true
    }
    const version = l[`${prefix}${mode}-version`]
    if (version !== undefined) {
      const parsed = parseVersion(version)
      if (parsed === undefined) errors.push(invalid(`metadata.labels[${prefix}${mode}-version]`, q(version), versionMsg))
      p[mode].minor = parsed ?? Infinity
      p[mode].version = parsed === undefined ? 'latest' : version
      if (mode === 'warn') hasWarnVersion = true
    }
  }
  // Warn defaults to the enforce level when that is explicitly stricter.
  if (!hasWarnLevel && hasEnforce && strictness[p.enforce.level] > strictness[p.warn.level]) {
    p.warn.level = p.enforce.level
    if (!hasWarnVersion) {
      p.warn.minor = p.enforce.minor
      p.warn.version = p.enforce.version
    }
  }
  return { ...p, errors }
}

/** Kinds whose pod template PodSecurity evaluates for warnings (DefaultPodSpecExtractor). */
const templateKinds = new Set(['apps/deployments', 'apps/replicasets', 'apps/statefulsets', 'apps/daemonsets', 'batch/jobs', '/replicationcontrollers', '/podtemplates'])

function templateOf(type: ResourceType, o: KubeObject): { meta: Obj; spec: Obj } | undefined {
  const spec = obj(o.spec)
  if (type.group === 'batch' && type.resource === 'cronjobs') {
    const t = obj(obj(obj(spec.jobTemplate).spec).template)
    return { meta: obj(t.metadata), spec: obj(t.spec) }
  }
  if (!templateKinds.has(`${type.group}/${type.resource}`)) return undefined
  const t = type.resource === 'podtemplates' ? obj(o.template) : obj(spec.template)
  return { meta: obj(t.metadata), spec: obj(t.spec) }
}

/** Only an image change makes a pod update worth evaluating (isSignificantPodUpdate). */
function significantPodUpdate(pod: KubeObject, old: KubeObject): boolean {
  const a = obj(pod.spec)
  const b = obj(old.spec)
  for (const key of ['containers', 'initContainers']) {
    const x = Array.isArray(a[key]) ? (a[key] as unknown[]) : []
    const y = Array.isArray(b[key]) ? (b[key] as unknown[]) : []
    if (x.length !== y.length) return true
    if (x.some((c, i) => obj(c).image !== obj(y[i]).image)) return true
  }
  const olds = new Map((Array.isArray(b.ephemeralContainers) ? b.ephemeralContainers : []).map((c) => [obj(c).name, obj(c).image]))
  return (Array.isArray(a.ephemeralContainers) ? a.ephemeralContainers : []).some((c) => !olds.has(obj(c).name) || olds.get(obj(c).name) !== obj(c).image)
}

const label = (lv: LevelVersion): string => `${lv.level}:${lv.version}`

/**
 * PodSecurity admission of a create or update (not subresources). Returns the warnings to send;
 * throws 403 when a Pod violates the enforce level, 422 when a Namespace's labels are invalid.
 */
export function admitPodSecurity(type: ResourceType, o: KubeObject, old: KubeObject | undefined, namespaceLabels: Record<string, string> | undefined): string[] {
  if (type.group === '' && type.resource === 'namespaces') {
    const { errors } = policyOf(o.metadata.labels)
    const oldErrors = old ? policyOf(old.metadata.labels).errors : []
    if (errors.length > 0 && (oldErrors.length === 0 || JSON.stringify(errors) !== JSON.stringify(oldErrors))) throw invalidError('', 'Namespace', o.metadata.name ?? '', errors)
    return []
  }
  const isPod = type.group === '' && type.resource === 'pods'
  const pod = isPod ? { meta: obj(o.metadata), spec: obj(o.spec) } : templateOf(type, o)
  if (!pod) return []
  if (isPod && old && !significantPodUpdate(o, old)) return []
  const policy = policyOf(namespaceLabels)
  if (isPod) {
    const failed = evaluatePod(policy.enforce, pod.meta, pod.spec)
    if (failed !== '') throw podForbidden(type, o, `violates PodSecurity ${q(label(policy.enforce))}: ${failed}`)
  }
  const warn = evaluatePod(policy.warn, pod.meta, pod.spec)
  return warn === '' ? [] : [`would violate PodSecurity ${q(label(policy.warn))}: ${warn}`]
}

function podForbidden(type: ResourceType, o: KubeObject, why: string): StatusError {
  return forbidden(type.group, type.resource, o.metadata.name ?? '', why)
}
