/**
 * The Pod Security Standards checks, one case each, transcribed from
 * k8s.io/pod-security-admission policy/check_*.go (1.34): the reason and detail each failing
 * check contributes to `violates PodSecurity "<level>:<version>": …`.
 */
import t from 'tap'
import { evaluatePod, policyOf } from '../operator/sandbox/admission/podsecurity.ts'

type Obj = Record<string, unknown>

const latest = (level: 'baseline' | 'restricted') => ({ level, minor: Infinity, version: 'latest' })
/** A pod that passes restricted, with `spec` merged over it. */
const hardened = (spec: Obj = {}, container: Obj = {}): Obj => ({
  securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [{ name: 'c', image: 'x', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }, ...container }],
  ...spec,
})
const sc = (extra: Obj): Obj => ({ securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, ...extra } })

const cases: [string, 'baseline' | 'restricted', Obj, string, Obj?][] = [
  ['check_hostNamespaces.go', 'baseline', hardened({ hostPID: true, hostIPC: true }), 'host namespaces (hostPID=true, hostIPC=true)'],
  ['check_hostPathVolumes.go', 'baseline', hardened({ volumes: [{ name: 'a', hostPath: { path: '/' } }, { name: 'b', hostPath: { path: '/x' } }] }), 'hostPath volumes (volumes "a", "b")'],
  ['check_capabilities_baseline.go', 'baseline', hardened({}, sc({ capabilities: { add: ['SYS_ADMIN', 'CHOWN'] } })), 'non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)'],
  ['check_procMount_baseline.go', 'baseline', hardened({}, sc({ procMount: 'Unmasked' })), 'procMount (container "c" must not set securityContext.procMount to "Unmasked")'],
  ['check_seLinuxOptions.go', 'baseline', hardened({ securityContext: { seLinuxOptions: { type: 'spc_t', user: 'root' } } }), 'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)'],
  ['check_seccompProfile_baseline.go', 'baseline', hardened({ securityContext: { seccompProfile: { type: 'Unconfined' } } }), 'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'],
  ['check_sysctls.go', 'baseline', hardened({ securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }, { name: 'net.ipv4.tcp_syncookies', value: '1' }] } }), 'forbidden sysctls (kernel.msgmax)'],
  ['check_windowsHostProcess.go', 'baseline', hardened({ securityContext: { windowsOptions: { hostProcess: true } } }), 'hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)'],
  ['check_appArmorProfile.go', 'baseline', hardened({}, sc({ appArmorProfile: { type: 'Unconfined' } })), 'forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")'],
  ['check_appArmorProfile.go (annotation)', 'baseline', hardened(), 'forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/c="unconfined"")', { annotations: { 'container.apparmor.security.beta.kubernetes.io/c': 'unconfined' } }],
  ['check_hostProbesAndhostLifecycle.go', 'baseline', hardened({}, { readinessProbe: { httpGet: { host: '10.0.0.1', port: 80 } }, lifecycle: { preStop: { tcpSocket: { host: 'example.com', port: 1 } } } }), 'probe or lifecycle host (container "c" uses probe or lifecycle hosts "10.0.0.1", "example.com")'],
  ['check_seccompProfile_restricted.go (explicit)', 'restricted', hardened({ securityContext: { runAsNonRoot: true } }, sc({ seccompProfile: { type: 'Unconfined' } })), 'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")'],
  ['check_runAsNonRoot.go (pod false)', 'restricted', hardened({ securityContext: { runAsNonRoot: false, seccompProfile: { type: 'Localhost' } } }), 'runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)'],
  ['check_runAsUser.go', 'restricted', hardened({ securityContext: { runAsNonRoot: true, runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } } }), 'runAsUser=0 (pod must not set runAsUser=0)'],
  ['check_restrictedVolumes.go', 'restricted', hardened({ volumes: [{ name: 'n', nfs: { server: 's', path: '/' } }, { name: 'e', emptyDir: {} }, { name: 'g', gitRepo: { repository: 'r' } }] }), 'restricted volume types (volumes "n", "g" use restricted volume types "gitRepo", "nfs")'],
  ['check_capabilities_restricted.go', 'restricted', hardened({}, { securityContext: { allowPrivilegeEscalation: false } }), 'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])'],
  ['check_allowPrivilegeEscalation.go (windows pods exempt from restricted-only checks)', 'restricted', { os: { name: 'windows' }, securityContext: { runAsNonRoot: true }, containers: [{ name: 'w', image: 'x' }] }, ''],
]

for (const [source, level, spec, detail, meta] of cases) {
  t.test(`${level} ${source}`, async (t) => {
    t.equal(evaluatePod(latest(level), meta ?? {}, spec), detail)
  })
}

t.test('a pod that passes restricted passes baseline too; privileged checks nothing', async (t) => {
  t.equal(evaluatePod(latest('restricted'), {}, hardened()), '')
  t.equal(evaluatePod(latest('baseline'), {}, hardened()), '')
  t.equal(evaluatePod({ level: 'privileged', minor: Infinity, version: 'latest' }, {}, { hostPID: true, containers: [] }), '')
})

t.test('versions: checks newer than the pinned version are skipped; restricted overrides apply only from their version (registry.go)', async (t) => {
  const probe = hardened({}, { readinessProbe: { httpGet: { host: 'h', port: 80 } } })
  t.equal(evaluatePod({ level: 'baseline', minor: 33, version: 'v1.33' }, {}, probe), '', 'hostProbesAndHostLifecycle starts at 1.34')
  const noCaps = hardened({}, { securityContext: { allowPrivilegeEscalation: false, runAsUser: 0, capabilities: { add: ['SYS_ADMIN'] } } })
  t.equal(evaluatePod({ level: 'restricted', minor: 21, version: 'v1.21' }, {}, noCaps), 'non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)', 'before 1.22 the baseline capabilities check applies; runAsUser starts at 1.23')
})

t.test('namespace labels: warn follows a stricter enforce unless set; bad values fail closed for enforce, open for warn and audit (api/helpers.go)', async (t) => {
  const p = policyOf({ 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/enforce-version': 'v1.29' })
  t.same([p.enforce.level, p.enforce.version, p.warn.level, p.warn.version], ['baseline', 'v1.29', 'baseline', 'v1.29'])
  const q = policyOf({ 'pod-security.kubernetes.io/enforce': 'bogus', 'pod-security.kubernetes.io/warn': 'bogus', 'pod-security.kubernetes.io/audit-version': 'v2' })
  t.same([q.enforce.level, q.warn.level, q.audit.version], ['restricted', 'privileged', 'latest'])
  t.equal(q.errors.length, 3)
})
