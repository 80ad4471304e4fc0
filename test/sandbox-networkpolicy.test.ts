// networking.k8s.io/v1 NetworkPolicies as kube-apiserver 1.34 serves them: discovery
// (pkg/registry/networking/networkpolicy/storage), defaults (pkg/apis/networking/v1/defaults.go),
// validation (pkg/apis/networking/validation/validation.go), the kubectl get columns
// (pkg/printers/internalversion/printers.go printNetworkPolicy), and real kubectl on top.
import t from 'tap'
import { apiGroupList, apiResourceList } from '../operator/sandbox/discovery.ts'
import { createCluster, startSandbox } from '../operator/sandbox/index.ts'
import { parseCIDRSloppy } from '../operator/kube/builtin/networkpolicy.ts'
import { kubectlFor } from './support/kubectl.ts'
import { call } from './support/sandbox-requests.ts'
import { tempDir } from './support/tmp.ts'

type Obj = Record<string, any>

const NP = '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies'
const policy = (name: string, spec?: Obj): Obj => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: 'default' }, ...(spec === undefined ? {} : { spec }) })

t.test('discovery: networking.k8s.io/v1 serves networkpolicies, namespaced, shortName netpol, every verb; /apis lists the group', async (t) => {
  const c = createCluster()
  const list = apiResourceList(c.registry, 'networking.k8s.io', 'v1') as Obj
  t.equal(list.groupVersion, 'networking.k8s.io/v1')
  t.same(list.resources, [{ name: 'networkpolicies', singularName: 'networkpolicy', namespaced: true, kind: 'NetworkPolicy', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], shortNames: ['netpol'] }], 'no status subresource')
  t.ok((apiGroupList(c.registry) as Obj).groups.some((g: Obj) => g.name === 'networking.k8s.io' && g.preferredVersion.groupVersion === 'networking.k8s.io/v1'))
})

t.test('pkg/apis/networking/v1/defaults.go: policyTypes Ingress (plus Egress with egress rules), port protocol TCP, podSelector and spec always present; generation follows the spec', async (t) => {
  const c = createCluster()
  const bare = call(c, `POST ${NP}`, policy('bare'))
  t.equal(bare.status, 201)
  t.same(bare.body.spec, { podSelector: {}, policyTypes: ['Ingress'] }, 'a policy without spec denies all ingress, as a real server stores it')
  t.equal(bare.body.metadata.generation, 1)

  const both = call(c, `POST ${NP}`, policy('both', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port: 11211 }, { port: 'memcache', protocol: 'UDP' }] }], egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ port: 53, endPort: 54 }] }] }))
  t.equal(both.status, 201)
  t.same(both.body.spec.policyTypes, ['Ingress', 'Egress'])
  t.same(both.body.spec.ingress[0].ports, [{ port: 11211, protocol: 'TCP' }, { port: 'memcache', protocol: 'UDP' }], 'only a missing protocol is defaulted')
  t.same(both.body.spec.egress[0].ports, [{ port: 53, endPort: 54, protocol: 'TCP' }])

  const egressOnly = call(c, `POST ${NP}`, policy('egress-only', { podSelector: {}, policyTypes: ['Egress'], ingress: [] }))
  t.equal(egressOnly.status, 201)
  t.same(egressOnly.body.spec, { podSelector: {}, policyTypes: ['Egress'] }, 'explicit policyTypes are kept; an empty list is omitted as Go omits it')
  const noEgressRules = call(c, `POST ${NP}`, policy('empty-egress', { egress: [] }))
  t.same(noEgressRules.body.spec.policyTypes, ['Ingress'], 'an empty egress list is no egress rule')

  const empties = call(c, `POST ${NP}`, policy('empties', { podSelector: { matchLabels: {} }, ingress: [{ from: [{ namespaceSelector: { matchLabels: {}, matchExpressions: [] }, podSelector: { matchExpressions: [{ key: 'canary', operator: 'DoesNotExist', values: [] }] } }, { ipBlock: { cidr: '10.0.0.0/8', except: [] } }], ports: [] }] }))
  t.same(empties.body.spec, { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchExpressions: [{ key: 'canary', operator: 'DoesNotExist' }] } }, { ipBlock: { cidr: '10.0.0.0/8' } }] }], policyTypes: ['Ingress'] }, 'empty maps and lists are omitted, as the Go types\' omitempty drops them')

  const got = call(c, `GET ${NP}/both`).body
  t.same(got.spec, both.body.spec, 'the defaults are what a read returns')
  const patched = call(c, `PATCH ${NP}/both`, { metadata: { labels: { a: 'b' } } }, { type: 'application/merge-patch+json' })
  t.equal(patched.body.metadata.generation, 1, 'a metadata change keeps the generation')
  const respec = call(c, `PATCH ${NP}/both`, { spec: { policyTypes: ['Ingress'] } }, { type: 'application/merge-patch+json' })
  t.equal(respec.status, 200)
  t.equal(respec.body.metadata.generation, 2, 'a spec change bumps it')
})

t.test('pkg/apis/networking/validation/validation.go ValidateNetworkPolicySpec: 422 with upstream\'s field paths and messages', async (t) => {
  const c = createCluster()
  const causes = (spec: Obj): string[] => {
    const r = call(c, `POST ${NP}`, policy('bad', spec))
    t.equal(r.status, 422, JSON.stringify(spec))
    return ((r.body.details?.causes ?? []) as Obj[]).map((x) => `${x.field}: ${x.message}`)
  }
  const table: [string, Obj, string[]][] = [
    ['policyTypes: more than two', { policyTypes: ['Ingress', 'Egress', 'Ingress'] }, ['spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes']],
    ['policyTypes: only Ingress and Egress', { policyTypes: ['Ingress', 'Sideways'] }, ['spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"']],
    ['ValidateNetworkPolicyPort: protocol', { ingress: [{ ports: [{ protocol: 'ICMP', port: 1 }] }] }, ['spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"']],
    ['ValidateNetworkPolicyPort: an empty protocol is not defaulted', { ingress: [{ ports: [{ protocol: '', port: 1 }] }] }, ['spec.ingress[0].ports[0].protocol: Unsupported value: "": supported values: "TCP", "UDP", "SCTP"']],
    ['ValidateNetworkPolicyPort: port number range', { egress: [{ ports: [{ port: 0 }, { port: 65536 }] }] }, ['spec.egress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive', 'spec.egress[0].ports[1].port: Invalid value: 65536: must be between 1 and 65535, inclusive']],
    ['ValidateNetworkPolicyPort: IANA_SVC_NAME', { ingress: [{ ports: [{ port: 'Mem--cache' }, { port: '11211' }] }] }, ['spec.ingress[0].ports[0].port: Invalid value: "Mem--cache": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)', 'spec.ingress[0].ports[0].port: Invalid value: "Mem--cache": must not contain consecutive hyphens', 'spec.ingress[0].ports[1].port: Invalid value: "11211": must contain at least one letter (a-z)']],
    ['ValidateNetworkPolicyPort: endPort below port, and out of range', { ingress: [{ ports: [{ port: 80, endPort: 79 }, { port: 80, endPort: 70000 }] }] }, ['spec.ingress[0].ports[0].endPort: Invalid value: 79: must be greater than or equal to `port`', 'spec.ingress[0].ports[1].endPort: Invalid value: 70000: must be between 1 and 65535, inclusive']],
    ['ValidateNetworkPolicyPort: endPort with a named port or none', { ingress: [{ ports: [{ port: 'http', endPort: 90 }, { endPort: 90 }] }] }, ['spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric', 'spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is not specified']],
    ['ValidateNetworkPolicyPeer: a peer must say something', { ingress: [{ from: [{}] }] }, ['spec.ingress[0].from[0]: Required value: must specify a peer']],
    ['ValidateNetworkPolicyPeer: ipBlock alone', { egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' }, namespaceSelector: {} }] }] }, ['spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer']],
    ['ValidateNetworkPolicyPeer: selectors are label selectors', { ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] }, namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Equals', values: ['a'] }] } }] }] }, ["spec.ingress[0].from[0].podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'", 'spec.ingress[0].from[0].namespaceSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator']],
    ['ValidateNetworkPolicySpec: podSelector', { podSelector: { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['x'] }] } }, ["spec.podSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]],
    ['ValidateIPBlock: cidr required', { ingress: [{ from: [{ ipBlock: { cidr: '' } }] }] }, ['spec.ingress[0].from[0].ipBlock.cidr: Required value']],
    ['ValidateIPBlock: cidr and excepts parse', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0' } }, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/33'] } }] }] }, ['spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)', 'spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "10.1.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)']],
    ['ValidateIPBlock: excepts are strict subsets of cidr', { egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['192.168.0.0/16', '10.0.0.0/8', '10.0.0.0/7', 'fd00::/64', '10.2.0.0/16'] } }] }] }, ['spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": must be a strict subset of `cidr`', 'spec.egress[0].to[0].ipBlock.except[1]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`', 'spec.egress[0].to[0].ipBlock.except[2]: Invalid value: "10.0.0.0/7": must be a strict subset of `cidr`', 'spec.egress[0].to[0].ipBlock.except[3]: Invalid value: "fd00::/64": must be a strict subset of `cidr`']],
  ]
  for (const [name, spec, want] of table) t.same(causes(spec), want, name)
  const r = call(c, `POST ${NP}`, policy('bad', { policyTypes: ['Sideways'] }))
  t.equal(r.body.reason, 'Invalid')
  t.equal(r.body.message, 'NetworkPolicy.networking.k8s.io "bad" is invalid: spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"')
})

t.test('validation.go accepts what upstream accepts: pod and namespace selectors together, IPv6 blocks, legacy CIDR forms (StrictIPCIDRValidation is off in 1.34), a repeated policyType within two', async (t) => {
  const c = createCluster()
  const ok: [string, Obj][] = [
    ['podSelector with namespaceSelector', { ingress: [{ from: [{ podSelector: { matchLabels: { app: 'op' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ops' } } }] }] }],
    ['IPv6 with an except', { egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8:1::/48'] } }] }] }],
    ['leading zeros and host bits', { egress: [{ to: [{ ipBlock: { cidr: '010.1.2.3/8', except: ['10.1.0.0/016'] } }] }] }],
    ['IPv4-mapped except inside an IPv4 cidr', { egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['::ffff:10.1.0.0/112'] } }] }] }],
    ['Ingress twice', { policyTypes: ['Ingress', 'Ingress'] }],
    ['SCTP and a named port', { ingress: [{ ports: [{ protocol: 'SCTP', port: 'memcache' }] }] }],
  ]
  ok.forEach(([name, spec], i) => t.equal(call(c, `POST ${NP}`, policy(`ok-${i}`, spec)).status, 201, name))
})

t.test('k8s.io/utils/net ParseCIDRSloppy (Go 1.16 net.ParseCIDR): what parses, and the masked network it yields', async (t) => {
  const ok: [string, number[], number][] = [
    ['10.1.2.3/8', [10, 0, 0, 0], 8],
    ['010.001.0.0/016', [10, 1, 0, 0], 16],
    ['0.0.0.0/0', [0, 0, 0, 0], 0],
    ['::/0', new Array(16).fill(0), 0],
    ['2001:db8::1/32', [0x20, 0x01, 0x0d, 0xb8, ...new Array(12).fill(0)], 32],
    ['::ffff:10.1.2.3/120', [...new Array(10).fill(0), 0xff, 0xff, 10, 1, 2, 0], 120],
    ['00001:0:0:0:0:0:0:8/128', [0, 1, ...new Array(13).fill(0), 8], 128],
  ]
  for (const [cidr, ip, ones] of ok) t.same(parseCIDRSloppy(cidr), { ip, ones }, cidr)
  for (const bad of ['10.0.0.0', '/8', '10.0.0.256/8', '10.0.0.0/33', '10.0.0/8', '10.0.0.0/ 8', '10.0.0.0/-1', '::/129', 'fe80::1%eth0/64', '1::2::3/64', '1:2:3:4:5:6:7:8::/64', '1:2:3:4:5:6:7/64', ':1/64', '1:2:3:4:5:6:7::1.2.3.4/64', '1::10000/64', 'x::/64']) {
    t.equal(parseCIDRSloppy(bad), undefined, bad)
  }
})

t.test('unknown fields: Strict refuses with the decoder\'s message, the default drops them with a warning', async (t) => {
  const c = createCluster()
  const body = policy('u', { podSelector: {}, ingress: [{ portz: [{ port: 80 }] }] })
  const strict = call(c, `POST ${NP}?fieldValidation=Strict`, body)
  t.equal(strict.status, 400)
  t.equal(strict.body.message, 'NetworkPolicy in version "v1" cannot be handled as a NetworkPolicy: strict decoding error: unknown field "spec.ingress[0].portz"')
  const warn = call(c, `POST ${NP}`, body)
  t.equal(warn.status, 201)
  t.same(warn.body.spec.ingress, [{}], 'the unknown field is not stored')
})

t.test('server-side apply: ingress, egress and policyTypes are atomic lists (k8s.io/api networking/v1 +listType=atomic), podSelector an atomic struct; a second manager conflicts on the whole list', async (t) => {
  const c = createCluster()
  const a = call(c, `PATCH ${NP}/s?fieldManager=a`, policy('s', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port: 80 }] }] }), { type: 'apply' })
  t.equal(a.status, 201)
  const fields = a.body.metadata.managedFields[0].fieldsV1
  t.same(fields['f:spec'], { 'f:ingress': {}, 'f:podSelector': {} }, 'whole lists and the whole selector are owned; the defaulted policyTypes are not')
  const b = call(c, `PATCH ${NP}/s?fieldManager=b`, policy('s', { ingress: [{ ports: [{ port: 443 }] }] }), { type: 'apply' })
  t.equal(b.status, 409)
  t.equal(b.body.message, 'Apply failed with 1 conflict: conflict with "a": .spec.ingress')
  const forced = call(c, `PATCH ${NP}/s?fieldManager=b&force=true`, policy('s', { ingress: [{ ports: [{ port: 443 }] }] }), { type: 'apply' })
  t.equal(forced.status, 200)
  t.same(forced.body.spec.ingress, [{ ports: [{ port: 443, protocol: 'TCP' }] }], 'the list is replaced, not merged')
  t.same(forced.body.spec.podSelector, { matchLabels: { app: 'web' } }, 'a keeps the selector')
})

t.test('real kubectl: apply --server-side then diff exits 0; get netpol columns; describe; explain networkpolicy.spec.ingress; a strict apply refuses an unknown field', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const cache = tempDir('mc-kubectl-cache-')
  const kc = kubectlFor(sb.kubeconfigPath)
  const kubectl = (args: string[], input?: string) => kc(['--cache-dir', cache, ...args], input)
  const manifest = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: memcached
  namespace: default
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: memcached
  ingress:
  - from:
    - podSelector:
        matchLabels:
          role: client
    ports:
    - port: 11211
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
  namespace: default
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: expressions
  namespace: default
spec:
  podSelector:
    matchLabels: {app: web}
    matchExpressions:
    - {key: tier, operator: NotIn, values: [b, a]}
    - {key: canary, operator: DoesNotExist}
  egress:
  - to:
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
`
  t.match(await kubectl(['apply', '--server-side', '-f', '-'], manifest), /networkpolicy.networking.k8s.io\/memcached serverside-applied/)
  t.equal(await kubectl(['diff', '--server-side', '-f', '-'], manifest), '', 'diff exits 0 and prints nothing: the defaults a real server adds are no difference')
  await t.rejects(kubectl(['diff', '--server-side', '-f', '-'], manifest.replace('port: 11211', 'port: 11212')), { code: 1, stdout: /^-\s+- port: 11211\n\+\s+- port: 11212$/m }, 'a real change is a difference (exit 1)')
  const table = (await kubectl(['get', 'netpol'])).trimEnd().split('\n').map((l) => l.trim().split(/\s{2,}/))
  t.same(table[0], ['NAME', 'POD-SELECTOR', 'AGE'])
  t.same(table.slice(1).map((r) => r.slice(0, 2)), [['deny-all', '<none>'], ['expressions', 'app=web,!canary,tier notin (a,b)'], ['memcached', 'app.kubernetes.io/name=memcached']])
  t.match(await kubectl(['get', 'netpol', 'memcached', '-o', 'jsonpath={.spec.policyTypes}{"|"}{.spec.ingress[0].ports[0].protocol}']), /^\["Ingress"\]\|TCP$/)
  const described = await kubectl(['describe', 'netpol', 'memcached'])
  t.match(described, /Spec:\n  PodSelector: +app\.kubernetes\.io\/name=memcached\n  Allowing ingress traffic:\n    To Port: 11211\/TCP\n    From:\n      PodSelector: role=client\n  Not affecting egress traffic\n  Policy Types: Ingress\n/, 'kubectl describe reads the defaults')
  t.match(await kubectl(['describe', 'netpol', 'expressions']), /Allowing egress traffic:\n    To Port: <any> \(traffic allowed to all ports\)\n    To:\n      IPBlock:\n        CIDR: 10\.0\.0\.0\/8\n        Except: 10\.1\.0\.0\/16\n  Policy Types: Ingress, Egress/)
  const explain = await kubectl(['explain', 'networkpolicy.spec.ingress'])
  t.match(explain, /GROUP:\s+networking\.k8s\.io/)
  t.match(explain, /FIELD: ingress <\[\]NetworkPolicyIngressRule>/)
  t.match(explain, /from\s+<\[\]NetworkPolicyPeer>/)
  t.match(explain, /ports\s+<\[\]NetworkPolicyPort>/)
  // Client-side apply builds a strategic merge patch from the OpenAPI schema: the rule lists have no
  // patch strategy there, so a changed list replaces the old one.
  const csa = (ports: string) => `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: csa, namespace: default}\nspec:\n  podSelector: {}\n  ingress:\n  - ports: [${ports}]\n`
  t.match(await kubectl(['apply', '-f', '-'], csa('{port: 80}, {port: 443}')), /networkpolicy.networking.k8s.io\/csa created/)
  t.match(await kubectl(['apply', '-f', '-'], csa('{port: 8443, protocol: UDP}')), /networkpolicy.networking.k8s.io\/csa configured/)
  t.equal(await kubectl(['get', 'netpol', 'csa', '-o', 'jsonpath={.spec.ingress[*].ports}']), '[{"port":8443,"protocol":"UDP"}]')
  const bad = manifest.split('---')[0]!.replace('    ports:', '    portz:')
  await t.rejects(kubectl(['apply', '--server-side', '-f', '-'], bad), { message: /\.spec\.ingress\[0\]\.portz: field not declared in schema/ })
  const invalid = manifest.split('---')[0]!.replace('port: 11211', 'port: 0')
  await t.rejects(kubectl(['apply', '--server-side', '-f', '-'], invalid), { message: /The NetworkPolicy "memcached" is invalid: spec.ingress\[0\].ports\[0\].port: Invalid value: 0: must be between 1 and 65535, inclusive/ })
})

t.test('RBAC (auth/bootstrap.ts, as upstream\'s bootstrap policy): view reads NetworkPolicies, edit writes them; kubectl says so', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const cache = tempDir('mc-kubectl-cache-')
  const admin = kubectlFor(sb.kubeconfigPath)
  await admin(['--cache-dir', cache, 'create', 'rolebinding', 'jane-view', '--clusterrole=view', '--user=jane', '-n', 'default'])
  await admin(['--cache-dir', cache, 'create', 'rolebinding', 'joe-edit', '--clusterrole=edit', '--user=joe', '-n', 'default'])
  const jane = kubectlFor(await sb.kubeconfigFor({ user: 'jane' }))
  const joe = kubectlFor(await sb.kubeconfigFor({ user: 'joe' }))
  const manifest = 'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: default}\nspec: {podSelector: {}}\n'
  await t.rejects(jane(['--cache-dir', cache, 'create', '-f', '-'], manifest), { message: /networkpolicies.networking.k8s.io is forbidden: User "jane" cannot create resource "networkpolicies" in API group "networking.k8s.io" in the namespace "default"/ })
  t.match(await joe(['--cache-dir', cache, 'create', '-f', '-'], manifest), /networkpolicy.networking.k8s.io\/p created/)
  t.match(await jane(['--cache-dir', cache, 'get', 'netpol', 'p', '-o', 'name']), /^networkpolicy.networking.k8s.io\/p$/m)
  t.equal((await jane(['--cache-dir', cache, 'auth', 'can-i', 'delete', 'netpol'], undefined).catch((e: { stdout: string }) => e.stdout)).trim(), 'no')
})
