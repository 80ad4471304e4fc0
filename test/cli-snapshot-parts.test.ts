/** The parts of the start-up snapshot that run the same in a test process: the module table, fingerprints, and the start decision. */
import { appendFileSync, cpSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { chartFiles, DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { ModuleUnavailable } from '../operator/render/errors.ts'
import { chartChanged, fingerprint, firstChange, newestChange } from '../operator/snapshot/fingerprint.ts'
import { lazyRequire } from '../operator/snapshot/preloaded-require.ts'
import { decide, physicalDir, prepare, restoreEnvironment, ROOT, sourcesNode, warmUp } from '../operator/snapshot/start.ts'

const dir = mkdtempSync(join(tmpdir(), 'mc-snapshot-parts-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('the snapshot’s module table: what validators need, built-ins, and nothing else', async (t) => {
  const ucs2length = (lazyRequire('ajv/dist/runtime/ucs2length') as { default: (s: string) => number }).default
  t.equal(ucs2length('a😀'), 2, 'a surrogate pair is one character')
  t.equal(typeof (lazyRequire('ajv/dist/runtime/uri') as { default: { parse: unknown } }).default.parse, 'function')
  t.equal(new (lazyRequire('ajv/dist/runtime/validation_error') as { default: new (errors: unknown[]) => Error }).default([]).message, 'validation failed')
  t.ok((lazyRequire('ajv/dist/runtime/equal') as { default: (a: unknown, b: unknown) => boolean }).default({ a: [1] }, { a: [1] }))
  t.match((lazyRequire('ajv/package.json') as { version: string }).version, /^\d+\.\d+\.\d+/)
  t.equal(typeof (lazyRequire('node:vm') as typeof import('node:vm')).Script, 'function')
  for (const id of ['ajv', 'ajv/dist/standalone', '__proto__', 'constructor', 'toString']) {
    let thrown: unknown
    try {
      lazyRequire(id)
    } catch (err) {
      thrown = err
    }
    t.ok(thrown instanceof ModuleUnavailable && thrown.id === id, `${id} is not available`)
  }
})

t.test('a fingerprint notices a file changed, created or deleted', async (t) => {
  const a = join(dir, 'a.txt')
  const b = join(dir, 'b.txt')
  writeFileSync(a, 'one')
  const fp = fingerprint([a, b])
  t.equal(fp[1]![1], -1, 'b does not exist yet')
  t.equal(firstChange(fp), undefined)
  writeFileSync(b, 'new')
  t.equal(firstChange(fp), b, 'created')
  rmSync(b)
  appendFileSync(a, '!')
  t.equal(firstChange(fp), a, 'changed')
  const again = fingerprint([a])
  rmSync(a)
  t.equal(firstChange(again), a, 'deleted')
})

t.test('a chart’s fingerprint covers its templates, including one added', async (t) => {
  const chart = join(dir, 'chart')
  cpSync(DEFAULT_CHART_DIR, chart, { recursive: true })
  const files = chartFiles(chart)
  t.ok(files.includes(join(chart, 'values.schema.json')) && files.includes(join(chart, 'templates', 'deployment.ejs')))
  const fp = fingerprint(files)
  t.notOk(chartChanged(chart, fp))
  writeFileSync(join(chart, 'templates', 'configmap.ejs'), '')
  t.ok(chartChanged(chart, fp), 'a template added')
  rmSync(join(chart, 'templates', 'configmap.ejs'))
  appendFileSync(join(chart, 'values.yaml'), '\n')
  t.ok(chartChanged(chart, fp), 'a file changed')
  t.same(chartFiles(join(dir, 'none')).slice(0, 3), [join(dir, 'none', 'Chart.yaml'), join(dir, 'none', 'values.yaml'), join(dir, 'none', 'values.schema.json')], 'no templates/: loading the chart reports it')
})

t.test('how a command starts', async (t) => {
  const source = join(dir, 'source.ts')
  writeFileSync(source, '')
  const built = prepare([source])
  const cli = join(ROOT, 'operator', 'cli')
  t.same(decide(['crd'], cli, built), { from: 'sources', reason: 'crd is not in the snapshot', stale: false }, 'not stale: only render is in it')
  t.same(decide([], cli, built), { from: 'sources', reason: 'no command is not in the snapshot', stale: false })
  t.same(decide(['render', '-f', 'x'], cli, built), { from: 'snapshot' })
  t.same(
    decide(['render'], join(dir, 'elsewhere', 'operator', 'cli'), built),
    { from: 'sources', reason: `the snapshot was built for the project in ${ROOT}; give this one its own MEMCACHED_OPERATOR_SNAPSHOT_DIR`, stale: true },
    'a snapshot serves only the project it was built for',
  )
  const gone = join(dir, 'moved-away')
  t.same(decide(['render'], cli, built, gone), { from: 'sources', reason: `the snapshot was built for the project in ${gone}`, stale: true }, 'a project that moved: the user is told')
  const chart = loadChart()
  t.same(decide(['render'], cli, { ...built, chart: [] }), { from: 'snapshot' }, 'a changed chart does not stop the snapshot')
  t.not(loadChart(), chart, 'but it is read again')
  appendFileSync(source, '// edited')
  t.same(decide(['render'], join(dir, 'operator', 'cli'), built, dir), { from: 'sources', reason: 'source.ts changed since the snapshot was built', stale: true })
})

t.test('the warm-up renders every sample three ways', async (t) => {
  t.equal(await warmUp(ROOT), 12, 'four samples: as a file, from stdin as JSON, with flags')
  const built = prepare([])
  const out: string[] = []
  t.equal(await warmUp(ROOT, built), 16, 'and each once more with the snapshot’s command line')
  built.io.target = { stdout: (text) => void out.push(text), stderr: (text) => void out.push(text), stdin: async () => '', cwd: join(ROOT, 'kustomize', 'samples') }
  t.equal(await built.render(['render', '-f', 'cache_v1alpha1_memcached.yaml', '-o', 'json']), 0, 'which parses again with none of the warm-up’s options left')
  t.match(out.join(''), /^\{\n  "apiVersion": "v1",\n  "kind": "List"/)
  out.length = 0
  t.equal(await built.render(['render', '-f', 'cache_v1alpha1_memcached.yaml']), 0)
  t.match(out.join(''), /^---\n# Source: memcached\/templates\/service\.ejs\n/, 'YAML again: -o json did not stay either')
  const broken = join(dir, 'project')
  cpSync(join(ROOT, 'kustomize', 'samples'), join(broken, 'kustomize', 'samples'), { recursive: true })
  writeFileSync(join(broken, 'kustomize', 'samples', 'bad.yaml'), 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: bad}\nspec: {size: -1}\n')
  await t.rejects(warmUp(broken), /render -f bad\.yaml \(bad\.yaml\) failed: error: .*spec\.size: must be >= 0/, 'a sample that does not render fails the build')
})

t.test('the sources run on the node a snapshot was built from, never on the snapshot itself', async (t) => {
  t.equal(sourcesNode(undefined, '/usr/bin/node', false), '/usr/bin/node', 'outside the snapshot: this process’s node')
  const executable = join(dir, 'render')
  writeFileSync(executable, 'node with a snapshot')
  const node = join(dir, 'node')
  writeFileSync(node, 'node')
  t.equal(sourcesNode(node, executable, true), node, 'the node the executable names')
  const refused = /the snapshot was started without the node binary it was built from \(.*\): run operator\/cli\/memcached-operator, not .*render/
  t.throws(() => sourcesNode(undefined, executable, true), refused, 'none named')
  t.throws(() => sourcesNode('node', executable, true), refused, 'a relative path')
  t.throws(() => sourcesNode(join(dir, 'missing'), executable, true), refused, 'a file that does not exist')
  t.throws(() => sourcesNode(dir, executable, true), refused, 'a directory')
  t.throws(() => sourcesNode(executable, executable, true), refused, 'the executable itself would start itself, forever')
  const link = join(dir, 'render-link')
  linkSync(executable, link)
  t.throws(() => sourcesNode(link, executable, true), refused, 'so would a link to it')
  rmSync(executable)
  t.equal(sourcesNode(node, `${executable} (deleted)`, true), node, 'a newer build removed the executable while it ran')
})

t.test('the executable’s directory as the kernel finds it, whatever path named it', async (t) => {
  const cli = join(ROOT, 'operator', 'cli')
  t.equal(physicalDir(cli), cli)
  t.equal(physicalDir(`${cli}/.`), cli, 'a `.` the shell left in')
  t.equal(physicalDir(`${ROOT}/operator/render/../cli`), cli, 'a `..` between two directories')
  const project = join(dir, 'linked-project')
  symlinkSync(ROOT, project)
  t.equal(physicalDir(join(project, 'operator', 'cli')), cli, 'the project through a link')
  const toCli = join(dir, 'cli-link')
  symlinkSync(cli, toCli)
  t.equal(physicalDir(`${toCli}/../cli`), cli, '`..` after a link is the parent of where the link leads, not of the link')
  // A path that reads as the project's, but through a link whose parent is elsewhere.
  const root = join(dir, 'root')
  mkdirSync(join(root, 'operator', 'cli'), { recursive: true })
  const elsewhere = join(dir, 'elsewhere', 'a')
  mkdirSync(join(elsewhere, 'operator', 'cli'), { recursive: true })
  symlinkSync(join(elsewhere, 'operator'), join(root, 'link'))
  t.equal(physicalDir(`${root}/link/../operator/cli`, root), join(elsewhere, 'operator', 'cli'), 'text that reads as the project, with a `..` the kernel takes elsewhere')
  t.equal(physicalDir(`${root}/operator/cli`, root), join(root, 'operator', 'cli'))
  t.equal(physicalDir(join(dir, 'missing', 'operator', 'cli')), join(dir, 'missing', 'operator', 'cli'), 'a directory that does not exist stays as named (and is not this project)')
})

t.test('what the executable added to GLIBC_TUNABLES for the snapshot’s process is taken out for what it starts', async (t) => {
  const cases: [before: NodeJS.ProcessEnv, after: NodeJS.ProcessEnv, what: string][] = [
    [{ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', MEMCACHED_OPERATOR_TUNABLES: 'added', PATH: '/bin' }, { PATH: '/bin' }, 'there was none'],
    [{ GLIBC_TUNABLES: 'glibc.malloc.check=0:glibc.malloc.hugetlb=1', MEMCACHED_OPERATOR_TUNABLES: 'added' }, { GLIBC_TUNABLES: 'glibc.malloc.check=0' }, 'the user’s own stays'],
    [{ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' }, { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' }, 'set by the user (no mark): left alone'],
    [{ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', MEMCACHED_OPERATOR_TUNABLES: 'other' }, { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1', MEMCACHED_OPERATOR_TUNABLES: 'other' }, 'another mark: left alone'],
    [{ MEMCACHED_OPERATOR_TUNABLES: 'added' }, {}, 'a mark without the tunable'],
  ]
  for (const [before, after, what] of cases) {
    const env = { ...before }
    restoreEnvironment(env)
    t.same(env, after, what)
  }
})
