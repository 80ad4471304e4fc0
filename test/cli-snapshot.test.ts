/**
 * The start-up snapshot of `render`, end to end: a copy of the project (its own operator/, charts/
 * and samples, the real node_modules) builds a snapshot into a temporary directory, and the
 * executable is run as users run it. Every render from the snapshot must print exactly what the
 * sources print; anything the snapshot was not built from must make it step aside.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { once } from 'node:events'
import { appendFileSync, chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

const root = resolve(import.meta.dirname, '..')
// Some fifteen builds, each of which makes a copy of node with the snapshot in it (5–10 s): longer
// than the default time of a test file.
t.setTimeout(600_000)

/** A copy of the project in a new temporary directory (removed after the tests), sharing its node_modules. */
function copyOf(from: string, prefix: string): string {
  const copy = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(copy, { recursive: true, force: true }))
  for (const dir of ['operator', 'charts', 'kustomize/samples']) cpSync(join(from, dir), join(copy, dir), { recursive: true })
  cpSync(join(from, 'package.json'), join(copy, 'package.json'))
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
  return copy
}

const project = copyOf(root, 'mc-snapshot-')
const snapshots = join(project, 'snapshots')
const cache = join(project, 'validator-cache')
const bin = join(project, 'operator/cli/memcached-operator')
const sample = join(project, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
const tuned = join(project, 'kustomize/samples/cache_v1alpha1_memcached_tuned.yaml')

// The executable finds `node` on PATH: the one running the tests.
const env = {
  ...process.env,
  PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
  MEMCACHED_OPERATOR_SNAPSHOT_DIR: snapshots,
  MEMCACHED_OPERATOR_CACHE_DIR: cache,
  MEMCACHED_OPERATOR_DEBUG_START: '1',
}

/**
 * The executable's command line without NODE_OPTIONS, or with `nodeOptions`: tap adds its own to
 * every process a test starts, and they preload ES modules, which sends every command to the sources.
 */
const withoutTapOptions = (executable: string, args: string[], nodeOptions?: string): [string, string[]] => [
  'env',
  ['-u', 'NODE_OPTIONS', ...(nodeOptions === undefined ? [] : [`NODE_OPTIONS=${nodeOptions}`]), executable, ...args],
]
const START = /^memcached-operator: started from (?:(the render snapshot)(?:, with (.*))?|(sources.*))\n/gm

interface Run {
  status: number | null
  stdout: string
  stderr: string
  /** How it started, from MEMCACHED_OPERATOR_DEBUG_START. */
  start: string[]
  /** What a start from the snapshot says it started with: node options and GLIBC_TUNABLES. */
  tuning: string[]
}

function run(args: string[], opts: { input?: string; env?: Record<string, string>; nodeOptions?: string } = {}): Run {
  const r: SpawnSyncReturns<string> = spawnSync(...withoutTapOptions(bin, args, opts.nodeOptions), { cwd: project, encoding: 'utf8', input: opts.input, env: { ...env, ...opts.env } })
  if (r.error) throw r.error
  const starts = [...r.stderr.matchAll(START)]
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.replace(START, ''), start: starts.map((m) => m[1] ?? m[3]!), tuning: starts.flatMap((m) => (m[2] === undefined ? [] : [m[2]])) }
}

/** The same command from the sources (main.js, as before the snapshot existed). */
function sources(args: string[], input?: string): Run {
  const r = spawnSync(process.execPath, [join(project, 'operator/cli/main.js'), ...args], { cwd: project, encoding: 'utf8', input, env: { ...env, MEMCACHED_OPERATOR_DEBUG_START: '' } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, start: [], tuning: [] }
}

function build(args: string[] = [], extra: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [join(project, 'operator/snapshot/build.ts'), ...args], { cwd: project, encoding: 'utf8', env: { ...env, ...extra } })
}

const current = (): string => readlinkSync(join(snapshots, 'current'))

/**
 * Keeps `file`'s text and modification time (to the nanosecond, by `touch -r`, as the build stamps
 * node) and returns what writes them back. The snapshot's fingerprint (operator/snapshot/fingerprint.ts)
 * is sizes and times, so a file put back is as it was built from, and no rebuild (some 5 s each)
 * is needed to get back to a usable snapshot.
 */
function keep(file: string): () => void {
  const text = readFileSync(file, 'utf8')
  const stamp = join(mkdtempSync(join(tmpdir(), 'mc-snapshot-stamp-')), 'stamp')
  writeFileSync(stamp, '')
  if (spawnSync('touch', ['-r', file, stamp]).status !== 0) throw new Error(`touch -r ${file} failed`)
  return () => {
    writeFileSync(file, text)
    if (spawnSync('touch', ['-r', stamp, file]).status !== 0) throw new Error(`touch -r onto ${file} failed`)
    rmSync(dirname(stamp), { recursive: true, force: true })
  }
}

/** What a render from the sources says when the snapshot is out of date because the render engine changed. */
const STALE = 'memcached-operator: the render snapshot is out of date (operator/render/engine.ts changed since the snapshot was built); running from the sources (npm run snapshot rebuilds it)\n'

t.test('the build that npm install runs (the prepare script)', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> }
  t.equal(pkg.bin['memcached-operator'], 'operator/cli/memcached-operator')
  t.match(pkg.scripts.prepare, /&& node operator\/snapshot\/build\.ts --if-possible$/, 'npm install builds the snapshot, after what the tests need')
  const r = build()
  t.equal(r.status, 0, r.stderr)
  t.match(r.stderr, /^render snapshot: \d+\.\d MB, built in \d+\.\d s into .*\/render\n$/)
  const executable = statSync(join(snapshots, 'current', 'render'))
  t.ok(executable.isFile() && (executable.mode & 0o111) === 0o111, 'an executable')
  t.ok(executable.size > statSync(process.execPath).size, 'node with the snapshot in it')
  t.ok(existsSync(join(snapshots, 'current', 'node')), 'beside a link to the node that built it')
  t.equal(statSync(join(snapshots, 'current', 'node.stamp')).mtimeMs, statSync(process.execPath).mtimeMs, 'and a stamp with its modification time')
  t.same(readdirSync(snapshots).sort(), [current(), 'current'].sort(), 'and nothing else: no lock, no temporary files')
  const first = current()
  t.equal(build().status, 0)
  t.same(readdirSync(snapshots).sort(), [first, current(), 'current'].sort(), 'a rebuild keeps the previous build (a render may have just found it)')
  t.equal(build().status, 0)
  t.notOk(readdirSync(snapshots).includes(first), 'but no older one')
  t.equal(readdirSync(snapshots).filter((f) => f.startsWith('build-')).length, 2)
})

t.test('a render from the snapshot prints exactly what the sources print', async (t) => {
  const longName = `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: ${'a'.repeat(253)}\nspec:\n  size: 2\n`
  const values = join(project, 'values.yaml')
  writeFileSync(values, 'memoryMB: 256\npodLabels:\n  team: cache\n')
  const cases: { args: string[]; input?: string; status: number }[] = [
    { args: ['render', '-f', sample], status: 0 },
    { args: ['render', '-f', tuned, '-o', 'json'], status: 0 },
    { args: ['render', '-f', '-'], input: readFileSync(sample, 'utf8'), status: 0 },
    { args: ['render', '-f', sample, '-f', tuned, '--set', 'size=5,maxConnections=2048', '--values', values, '-n', 'other'], status: 0 },
    // A name longer than any DNS limit is shortened with a hash: the hash module loads on first use.
    { args: ['render', '-f', '-'], input: longName, status: 0 },
    { args: ['render', '-f', '-'], input: 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: -1, bogus: 1}\n', status: 1 },
    { args: ['render', '-f', join(project, 'missing.yaml')], status: 1 },
    { args: ['render', '--nope'], status: 2 },
    { args: ['render', '--help'], status: 0 },
  ]
  for (const c of cases) {
    const ours = run(c.args, { input: c.input })
    const theirs = sources(c.args, c.input)
    const what = `${c.args.join(' ')}${c.input ? ' < input' : ''}`
    t.same(ours.start, ['the render snapshot'], `${what}: started from the snapshot`)
    t.equal(ours.status, c.status, `${what}: exit ${c.status}`)
    t.equal(ours.stdout, theirs.stdout, `${what}: the same output`)
    t.equal(ours.stderr, theirs.stderr, `${what}: the same errors`)
    t.equal(theirs.status, c.status)
  }
  t.match(run(['render', '-f', sample]).stdout, /kind: Deployment/, 'and the output is a render (the comparison can fail)')
})

t.test('other commands, and MEMCACHED_OPERATOR_SNAPSHOT=off, run from the sources', async (t) => {
  const crd = run(['crd'])
  t.equal(crd.status, 0)
  t.same(crd.start, ['sources'])
  t.equal(crd.stdout, sources(['crd']).stdout)
  const off = run(['render', '-f', sample], { env: { MEMCACHED_OPERATOR_SNAPSHOT: 'off' } })
  t.same(off.start, ['sources'])
  t.equal(off.stdout, sources(['render', '-f', sample]).stdout)
})

t.test('the snapshot starts with one V8 worker thread, a 4 MB young generation and malloc’s huge pages, unless GLIBC_TUNABLES chose otherwise', async (t) => {
  const cases: [given: string, seen: string][] = [
    ['', 'glibc.malloc.hugetlb=1'],
    ['glibc.malloc.check=0', 'glibc.malloc.check=0:glibc.malloc.hugetlb=1'],
    ['glibc.malloc.hugetlb=0', 'glibc.malloc.hugetlb=0'],
    ['glibc.malloc.check=0:glibc.malloc.hugetlb=2', 'glibc.malloc.check=0:glibc.malloc.hugetlb=2'],
  ]
  const plain = sources(['render', '-f', sample]).stdout
  // Node reads the options of a single executable application from its configuration since 22.20 and 24.7.
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
  const options = major > 24 || (major === 24 && minor >= 7) || (major === 22 && minor >= 20) ? '--v8-pool-size=1 --min-semi-space-size=4' : 'no node options'
  for (const [given, seen] of cases) {
    const r = run(['render', '-f', sample], { env: { GLIBC_TUNABLES: given } })
    t.same(r.start, ['the render snapshot'], `GLIBC_TUNABLES=${given}: started from the snapshot`)
    t.same(r.tuning, [`${options} and GLIBC_TUNABLES=${seen}`], `GLIBC_TUNABLES=${given}: the process sees ${seen}`)
    t.equal(r.stdout, plain, 'and prints what the sources print')
  }
  // Every other command (the operator among them, which runs for days) starts as before.
  const hook = join(project, 'tunables.mjs')
  writeFileSync(hook, "process.stderr.write(`GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES ?? '(unset)'}\\n`)\n")
  const crd = spawnSync('env', ['-u', 'GLIBC_TUNABLES', `NODE_OPTIONS=--import=${hook}`, bin, 'crd'], { cwd: project, encoding: 'utf8', env })
  t.equal(crd.status, 0, crd.stderr)
  t.equal(crd.stderr, 'memcached-operator: started from sources\nGLIBC_TUNABLES=(unset)\n')
  // Nor does what the snapshot's process starts: the sources, when it finds itself out of date.
  const engine = join(project, 'operator/render/engine.ts')
  const before = readFileSync(engine, 'utf8')
  const putBack = keep(engine)
  writeFileSync(engine, `${before}\nif (process.env.PRINT_TUNABLES) process.stderr.write(\`GLIBC_TUNABLES=\${process.env.GLIBC_TUNABLES ?? '(unset)'} \${process.env.MEMCACHED_OPERATOR_TUNABLES ?? ''}\\n\`)\n`)
  for (const given of ['', 'glibc.malloc.check=0', 'glibc.malloc.hugetlb=1']) {
    const r = run(['render', '-f', sample], { env: { GLIBC_TUNABLES: given, PRINT_TUNABLES: '1' } })
    t.same(r.start, ['sources (operator/render/engine.ts changed since the snapshot was built)'])
    t.equal(r.stderr, `${STALE}GLIBC_TUNABLES=${given || '(unset)'} \n`, `GLIBC_TUNABLES=${given}: the sources get the user's own, and no mark`)
    t.equal(r.stdout, plain)
  }
  putBack()
  t.same(run(['render', '-f', sample]).start, ['the render snapshot'], 'the file as it was built from: the snapshot again')
})

t.test('a chart file changed: the snapshot reads the chart again', async (t) => {
  const template = join(project, 'charts/memcached/templates/service.ejs')
  const before = readFileSync(template, 'utf8')
  t.teardown(() => writeFileSync(template, before))
  writeFileSync(template, before.replace('metadata:\n', 'metadata:\n  annotations:\n    edited: "yes"\n'))
  const r = run(['render', '-f', sample])
  t.same(r.start, ['the render snapshot'])
  t.match(r.stdout, /annotations:\n    edited: "yes"/)
  t.equal(r.stdout, sources(['render', '-f', sample]).stdout)
})

t.test('another chart whose schema was never compiled: the command runs from the sources', async (t) => {
  const other = join(project, 'other-chart')
  cpSync(join(project, 'charts/memcached'), other, { recursive: true })
  const schema = JSON.parse(readFileSync(join(other, 'values.schema.json'), 'utf8')) as { properties: Record<string, unknown> }
  schema.properties.team = { type: 'string' }
  writeFileSync(join(other, 'values.schema.json'), JSON.stringify(schema, null, 2))
  const args = ['render', '-f', sample, '--chart', other, '--set', 'team=cache']
  const first = run(args)
  t.same(first.start, ['the render snapshot', 'sources (the chart needs ajv)'], 'a snapshot cannot load ajv to compile the schema')
  t.equal(first.status, 0, first.stderr)
  t.equal(first.stdout, sources(args).stdout)
  const second = run(args)
  t.same(second.start, ['the render snapshot'], 'the validator compiled by that run is cached: the next one stays in the snapshot')
  t.equal(second.stdout, first.stdout)
  // The chart loads before the input is read: standard input is still there for the sources.
  schema.properties.team2 = { type: 'string' }
  writeFileSync(join(other, 'values.schema.json'), JSON.stringify(schema, null, 2))
  const stdin = run(['render', '-f', '-', '--chart', other], { input: readFileSync(sample, 'utf8') })
  t.same(stdin.start, ['the render snapshot', 'sources (the chart needs ajv)'])
  t.equal(stdin.status, 0, stdin.stderr)
  t.equal(stdin.stdout, sources(['render', '-f', sample, '--chart', other]).stdout)
  // node found through a relative PATH entry: the sources run on it all the same.
  schema.properties.team3 = { type: 'string' }
  writeFileSync(join(other, 'values.schema.json'), JSON.stringify(schema, null, 2))
  const bin = relative(project, dirname(process.execPath))
  t.notOk(bin.startsWith('/'), 'a relative path to the directory of node')
  const relativePath = run(args, { env: { PATH: `${bin}:${process.env.PATH ?? ''}` } })
  t.same(relativePath.start, ['the render snapshot', 'sources (the chart needs ajv)'])
  t.equal(relativePath.status, 0, relativePath.stderr)
  t.equal(relativePath.stdout, first.stdout)
})

t.test('a source file changed: the sources run, the user is told in one line, nothing is left running; npm run snapshot mends it', async (t) => {
  const built = current()
  const engine = join(project, 'operator/render/engine.ts')
  appendFileSync(engine, '\n// edited\n')
  const r = run(['render', '-f', sample])
  t.same(r.start, ['sources (operator/render/engine.ts changed since the snapshot was built)'])
  t.equal(r.status, 0)
  t.equal(r.stderr, STALE, 'one line on stderr')
  t.equal(r.stdout, sources(['render', '-f', sample]).stdout)
  t.equal(spawnSync('pgrep', ['-f', join(project, 'operator/snapshot/build.ts')]).status, 1, 'no build was started')
  t.equal(current(), built, 'the snapshot is left as it was')
  t.same(run(['render', '-f', sample]).start, ['sources (operator/render/engine.ts changed since the snapshot was built)'], 'until it is rebuilt')
  t.equal(build().status, 0)
  const after = run(['render', '-f', sample])
  t.same(after.start, ['the render snapshot'], 'then the next render starts from it')
  t.equal(after.stderr, '')
  t.equal(after.stdout, r.stdout)
})

t.test('the build’s executable run by hand does not run the sources on itself', async (t) => {
  // It is a copy of node that always starts the snapshot: were it to run the sources on itself, it
  // would start itself again and again.
  const r = spawnSync(...withoutTapOptions(join(snapshots, 'current', 'render'), ['render', '-f', sample]), { cwd: project, encoding: 'utf8', env, timeout: 30_000 })
  t.equal(r.status, 1, r.stderr)
  t.match(r.stderr, /the snapshot was started without the node binary it was built from \(render\): run operator\/cli\/memcached-operator, not \//)
  t.equal(r.stdout, '')
})

t.test('package.json changed (its version is in the snapshot): the sources run', async (t) => {
  const pkg = join(project, 'package.json')
  const before = readFileSync(pkg, 'utf8')
  const putBack = keep(pkg)
  writeFileSync(pkg, before.replace(/"version": "[^"]+"/, '"version": "9.9.9"'))
  const r = run(['render', '--version'])
  t.same(r.start, ['sources (package.json changed since the snapshot was built)'])
  putBack()
  t.same(run(['render', '-f', sample]).start, ['the render snapshot'])
})

t.test('a snapshot built by another node binary is not used', async (t) => {
  const link = join(snapshots, 'current', 'node')
  const built = current()
  rmSync(link)
  writeFileSync(link, '')
  const r = run(['render', '-f', sample])
  t.same(r.start, ['sources (the snapshot was built by another node binary; npm run snapshot rebuilds it)'])
  t.equal(r.stderr, 'memcached-operator: the render snapshot was built by another node binary; running from the sources (npm run snapshot rebuilds it)\n', 'the user is told in one line')
  t.equal(r.status, 0)
  t.equal(r.stdout, sources(['render', '-f', sample]).stdout)
  t.equal(build().status, 0, 'rebuilding mends it')
  t.not(current(), built, 'with a new build')
  t.same(run(['render', '-f', sample]).start, ['the render snapshot'])
})

t.test('a node binary rewritten in place (same file, another modification time) is not used', async (t) => {
  const stamp = join(snapshots, 'current', 'node.stamp')
  const real = statSync(stamp)
  utimesSync(stamp, real.atime, new Date(real.mtimeMs - 1000))
  t.same(run(['render', '-f', sample]).start, ['sources (the snapshot was built by another node binary; npm run snapshot rebuilds it)'])
  spawnSync('touch', ['-r', process.execPath, stamp])
  t.same(run(['render', '-f', sample]).start, ['the render snapshot'], 'the stamp has the exact time again')
})

t.test('NODE_OPTIONS that load ES modules first run the sources; other NODE_OPTIONS do not matter', async (t) => {
  const hook = join(project, 'hook.mjs')
  writeFileSync(hook, "process.stderr.write('hook loaded\\n')\n")
  const r = run(['render', '-f', sample], { nodeOptions: `--import=${hook}` })
  t.same(r.start, ['sources (NODE_OPTIONS loads ES modules first, which a process started from a snapshot does not)'])
  t.equal(r.stderr, 'hook loaded\n', 'and the module ran')
  t.equal(r.stdout, sources(['render', '-f', sample]).stdout)
  t.same(run(['render', '-f', sample], { nodeOptions: '--max-old-space-size=200' }).start, ['the render snapshot'])
})

t.test('a copy of the project does not use the snapshot of the original', async (t) => {
  const copy = copyOf(project, 'mc-snapshot-copy-')
  const template = join(copy, 'charts/memcached/templates/service.ejs')
  writeFileSync(template, readFileSync(template, 'utf8').replace('metadata:\n', 'metadata:\n  annotations:\n    copy: "yes"\n'))
  // The same snapshot directory: as if the project had been moved, or the directory were shared.
  const r = spawnSync(...withoutTapOptions(join(copy, 'operator/cli/memcached-operator'), ['render', '-f', sample]), { cwd: copy, encoding: 'utf8', env: { ...env, MEMCACHED_OPERATOR_SNAPSHOT: '' } })
  t.match(r.stderr, /started from sources \(the snapshot was built for the project in .*mc-snapshot-.*; give this one its own MEMCACHED_OPERATOR_SNAPSHOT_DIR\)/)
  t.equal(r.status, 0)
  t.match(r.stdout, /copy: "yes"/, "the copy's own chart and sources rendered it")
  t.same(run(['render', '-f', sample]).start, ['the render snapshot'], 'and the original still starts from its own')
})

t.test('the executable found through links, relative paths and CDPATH', async (t) => {
  const bin2 = join(project, 'bin')
  mkdirSync(bin2, { recursive: true })
  symlinkSync('../operator/cli/memcached-operator', join(bin2, 'first'))
  symlinkSync('first', join(bin2, 'memcached-operator'))
  const viaLinks = spawnSync(...withoutTapOptions(join(bin2, 'memcached-operator'), ['render', '-f', sample]), { cwd: project, encoding: 'utf8', env })
  t.match(viaLinks.stderr, /started from the render snapshot/, 'a chain of relative links, as npm makes in node_modules/.bin')
  t.equal(viaLinks.stdout, sources(['render', '-f', sample]).stdout)
  const decoy = join(project, 'decoy')
  mkdirSync(join(decoy, 'cli'), { recursive: true })
  const relative = spawnSync(...withoutTapOptions('./cli/memcached-operator', ['render', '-f', sample]), { cwd: join(project, 'operator'), encoding: 'utf8', env: { ...env, CDPATH: decoy } })
  t.match(relative.stderr, /started from the render snapshot/, 'a relative path, with a CDPATH that holds a cli/ directory')
  t.equal(relative.stdout, sources(['render', '-f', sample]).stdout)
  const bySh = spawnSync(...withoutTapOptions('sh', ['memcached-operator', 'render', '-f', sample]), { cwd: bin2, encoding: 'utf8', env })
  t.match(bySh.stderr, /started from the render snapshot/, 'sh and the name of a link in the current directory')
  const here = spawnSync(...withoutTapOptions('./memcached-operator', ['render', '-f', sample]), { cwd: join(project, 'operator/cli'), encoding: 'utf8', env })
  t.match(here.stderr, /started from the render snapshot/, 'from its own directory')
  // The executable does not resolve the path it was given: the snapshot does.
  const linkedProject = `${project}-link`
  symlinkSync(project, linkedProject)
  t.teardown(() => rmSync(linkedProject))
  const throughLink = spawnSync(...withoutTapOptions(join(linkedProject, 'operator/cli/memcached-operator'), ['render', '-f', sample]), { cwd: tmpdir(), encoding: 'utf8', env })
  t.match(throughLink.stderr, /^memcached-operator: started from the render snapshot/, 'the project through a link to it')
  t.equal(throughLink.stdout, viaLinks.stdout)
  // `..` after a link is the parent of where the link leads; read as text, bin/x/../cli would be bin/cli, which does not exist.
  symlinkSync(join(project, 'operator/render'), join(bin2, 'x'))
  const dotDot = spawnSync(...withoutTapOptions('bin/x/../cli/memcached-operator', ['render', '-f', sample]), { cwd: project, encoding: 'utf8', env })
  t.match(dotDot.stderr, /^memcached-operator: started from the render snapshot/, '`..` after a link')
  t.equal(dotDot.stdout, viaLinks.stdout)
  const dotDotSources = spawnSync(...withoutTapOptions('bin/x/../cli/memcached-operator', ['crd']), { cwd: project, encoding: 'utf8', env })
  t.equal(dotDotSources.status, 0, dotDotSources.stderr)
  t.equal(dotDotSources.stdout, sources(['crd']).stdout, 'and the sources, for another command')
})

t.test('the snapshot in the project’s own node_modules (no MEMCACHED_OPERATOR_SNAPSHOT_DIR)', async (t) => {
  // A project of its own, whose node_modules is a directory (not a link to this one's): the
  // executable's default snapshot directory is inside it.
  const own = mkdtempSync(join(tmpdir(), 'mc-snapshot-own-'))
  t.teardown(() => rmSync(own, { recursive: true, force: true }))
  for (const dir of ['operator', 'charts', 'kustomize/samples']) cpSync(join(project, dir), join(own, dir), { recursive: true })
  cpSync(join(project, 'package.json'), join(own, 'package.json'))
  mkdirSync(join(own, 'node_modules'))
  for (const name of readdirSync(join(root, 'node_modules'))) if (name !== '.cache') symlinkSync(join(root, 'node_modules', name), join(own, 'node_modules', name))
  const ownEnv: Record<string, string | undefined> = { ...env, MEMCACHED_OPERATOR_SNAPSHOT_DIR: undefined }
  const built = spawnSync(process.execPath, [join(own, 'operator/snapshot/build.ts')], { cwd: own, encoding: 'utf8', env: ownEnv })
  t.equal(built.status, 0, built.stderr)
  t.ok(existsSync(join(own, 'node_modules/.cache/memcached-operator/current/render')), 'built into node_modules/.cache/memcached-operator')
  const ownSample = join(own, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
  symlinkSync(join(own, 'operator/render'), join(own, 'x'))
  // (Not join(), which would read the `..` as text.)
  for (const executable of [join(own, 'operator/cli/memcached-operator'), `${own}/x/../cli/memcached-operator`]) {
    const r = spawnSync(...withoutTapOptions(executable, ['render', '-f', ownSample]), { cwd: own, encoding: 'utf8', env: ownEnv })
    t.match(r.stderr, /^memcached-operator: started from the render snapshot/, `${relative(own, executable)}: found it`)
    t.equal(r.stdout, sources(['render', '-f', sample]).stdout)
  }
})

t.test('node found on PATH as the shell finds it', async (t) => {
  const empty = join(project, 'empty')
  mkdirSync(empty, { recursive: true })
  // The last, empty entry of the PATH is the current directory: node's.
  const r = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', `PATH=${empty}:`, bin, 'render', '-f', sample], { cwd: dirname(process.execPath), encoding: 'utf8', env })
  t.match(r.stderr, /^memcached-operator: started from the render snapshot/, 'an empty last entry')
  t.equal(r.status, 0, r.stderr)
  const first = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', `PATH=:${empty}`, bin, 'render', '-f', sample], { cwd: dirname(process.execPath), encoding: 'utf8', env })
  t.match(first.stderr, /^memcached-operator: started from the render snapshot/, 'an empty first entry')
  const other = join(project, 'other-node')
  mkdirSync(other, { recursive: true })
  writeFileSync(join(other, 'node'), '#!/bin/sh\nexec "$REAL_NODE" "$@"\n', { mode: 0o755 })
  const shadowed = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', `PATH=${empty}:${other}:${dirname(process.execPath)}:/usr/bin:/bin`, `REAL_NODE=${process.execPath}`, bin, 'render', '-f', sample], { cwd: project, encoding: 'utf8', env })
  t.match(shadowed.stderr, /^memcached-operator: started from sources \(the snapshot was built by another node binary/, 'the first node on PATH decides, as for any command')
  t.equal(shadowed.status, 0, shadowed.stderr)
  t.equal(shadowed.stdout, sources(['render', '-f', sample]).stdout)
  chmodSync(join(other, 'node'), 0o644)
  const skipped = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', `PATH=${other}:${dirname(process.execPath)}:/usr/bin:/bin`, bin, 'render', '-f', sample], { cwd: project, encoding: 'utf8', env })
  t.match(skipped.stderr, /^memcached-operator: started from the render snapshot/, 'a file that is not executable is not node')
})

t.test('a command from the sources is stopped with the snapshot process that started it', async (t) => {
  const engine = join(project, 'operator/render/engine.ts')
  t.teardown(keep(engine))
  appendFileSync(engine, '\n// edited again\n')
  // From the sources (a source changed), waiting on standard input.
  const child = spawn(...withoutTapOptions(bin, ['render', '-f', '-']), { cwd: project, env, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d))
  let inner: number | undefined
  for (let i = 0; i < 100 && inner === undefined; i++) {
    await new Promise((ok) => setTimeout(ok, 100))
    const ps = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
    inner = Number(ps.stdout.trim().split('\n')[0]) || undefined
  }
  t.ok(inner, `the sources run in a child process (${stderr.trim()})`)
  child.kill('SIGTERM')
  const [, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null]
  t.equal(signal, 'SIGTERM', 'the snapshot process dies of the signal')
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    await new Promise((ok) => setTimeout(ok, 100))
    alive = spawnSync('kill', ['-0', String(inner)]).status === 0
  }
  t.notOk(alive, 'and so does the command it started')
})

t.test('one build at a time', async (t) => {
  const built = current()
  const lock = join(snapshots, 'build.lock')
  writeFileSync(lock, 'another')
  const busy = build(['--if-possible'])
  t.equal(busy.status, 0)
  t.match(busy.stderr, /another build is running/)
  t.equal(current(), built, 'nothing was built')
  t.equal(readFileSync(lock, 'utf8'), 'another', "and the other build's lock is left alone")
  // npm run snapshot waits for the other build instead.
  const waiting = spawn(process.execPath, [join(project, 'operator/snapshot/build.ts')], { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] })
  let waited = ''
  waiting.stderr.on('data', (d: Buffer) => (waited += d))
  await new Promise((ok) => setTimeout(ok, 1000))
  t.equal(current(), built, 'it waits while the lock is held')
  rmSync(lock)
  const [code] = (await once(waiting, 'exit')) as [number | null]
  t.equal(code, 0, waited)
  t.not(current(), built, 'and builds once it is released')
  const afterWait = current()
  writeFileSync(lock, 'another')
  const old = new Date(Date.now() - 10 * 60_000)
  utimesSync(lock, old, old)
  const stale = build()
  t.equal(stale.status, 0, stale.stderr)
  t.not(current(), afterWait, 'a lock left by a build that died is taken over')
  t.notOk(existsSync(lock))
})

t.test('the build: usage, and MEMCACHED_OPERATOR_SNAPSHOT=off', async (t) => {
  const usage = build(['--bogus'])
  t.equal(usage.status, 2)
  t.match(usage.stderr, /unknown argument: --bogus/)
  const off = build([], { MEMCACHED_OPERATOR_SNAPSHOT: 'off' })
  t.equal(off.status, 0)
  t.match(off.stderr, /not built \(MEMCACHED_OPERATOR_SNAPSHOT=off\)/)
})

t.test('npm ci builds no snapshot (the prepare script under npm ci)', async (t) => {
  const dir = join(project, 'snapshots-ci')
  const ci = build(['--if-possible'], { npm_command: 'ci', MEMCACHED_OPERATOR_SNAPSHOT_DIR: dir })
  t.equal(ci.status, 0)
  t.match(ci.stderr, /not built by npm ci \(npm install, or npm run snapshot, builds it\)/)
  t.notOk(existsSync(join(dir, 'current')), 'nothing built')
})

t.test('a build that fails: npm install goes on without the snapshot, and the reason is kept', async (t) => {
  const bad = join(project, 'kustomize/samples/bad.yaml')
  writeFileSync(bad, 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: bad}\nspec: {size: -1}\n')
  t.teardown(() => rmSync(bad, { force: true }))
  const built = current()
  const possible = build(['--if-possible'])
  t.equal(possible.status, 0, 'the prepare script does not fail npm install')
  t.match(possible.stderr, /not built, so render starts from the sources: .*render -f bad\.yaml \(bad\.yaml\) failed: .*spec\.size: must be >= 0/s)
  t.match(readFileSync(join(snapshots, 'last-failure'), 'utf8'), /spec\.size: must be >= 0/)
  t.equal(current(), built, 'the previous snapshot stays')
  const strict = build()
  t.equal(strict.status, 1, 'npm run snapshot does fail')
  rmSync(bad)
  t.equal(build().status, 0)
  t.notOk(existsSync(join(snapshots, 'last-failure')), 'a successful build clears it')
})

t.test('a production install has no esbuild: no snapshot, and npm install does not fail', async (t) => {
  const prod = mkdtempSync(join(tmpdir(), 'mc-snapshot-prod-'))
  t.teardown(() => rmSync(prod, { recursive: true, force: true }))
  cpSync(join(project, 'operator'), join(prod, 'operator'), { recursive: true })
  mkdirSync(join(prod, 'node_modules'))
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name !== 'esbuild' && name !== '.cache' && name !== '@esbuild') symlinkSync(join(root, 'node_modules', name), join(prod, 'node_modules', name))
  }
  const script = join(prod, 'operator/snapshot/build.ts')
  const opts = { cwd: prod, encoding: 'utf8' as const, env: { ...env, MEMCACHED_OPERATOR_SNAPSHOT_DIR: join(prod, 'snapshots') } }
  const possible = spawnSync(process.execPath, [script, '--if-possible'], opts)
  t.equal(possible.status, 0)
  t.match(possible.stderr, /not built, so render starts from the sources: esbuild \(a devDependency\) is not installed/)
  const required = spawnSync(process.execPath, [script], opts)
  t.equal(required.status, 1)
  t.match(required.stderr, /esbuild \(a devDependency\) is not installed/)
  // Without a snapshot, a render runs the sources and says so in one line; off says nothing.
  cpSync(join(project, 'charts'), join(prod, 'charts'), { recursive: true })
  cpSync(join(project, 'package.json'), join(prod, 'package.json'))
  const executable = join(prod, 'operator/cli/memcached-operator')
  const render = spawnSync(...withoutTapOptions(executable, ['render', '-f', sample]), { ...opts, env: { ...opts.env, MEMCACHED_OPERATOR_DEBUG_START: '' } })
  t.equal(render.status, 0, render.stderr)
  t.equal(render.stderr, 'memcached-operator: there is no render snapshot; running from the sources (npm install, or npm run snapshot, builds it)\n')
  t.match(render.stdout, /kind: Deployment/)
  const off = spawnSync(...withoutTapOptions(executable, ['render', '-f', sample]), { ...opts, env: { ...opts.env, MEMCACHED_OPERATOR_DEBUG_START: '', MEMCACHED_OPERATOR_SNAPSHOT: 'off' } })
  t.equal(off.stderr, '', 'MEMCACHED_OPERATOR_SNAPSHOT=off: nothing to say')
  t.equal(off.stdout, render.stdout)
})

t.test('the build touches nothing in its directory but its own', async (t) => {
  const foreign = join(snapshots, 'build-output')
  mkdirSync(foreign)
  writeFileSync(join(foreign, 'keep.txt'), 'not ours')
  const lookalike = join(snapshots, 'build-1-1')
  mkdirSync(lookalike)
  writeFileSync(join(lookalike, 'keep.txt'), 'not ours either')
  t.equal(build().status, 0)
  t.equal(build().status, 0)
  t.equal(readFileSync(join(foreign, 'keep.txt'), 'utf8'), 'not ours')
  t.equal(readFileSync(join(lookalike, 'keep.txt'), 'utf8'), 'not ours either', 'even when its name looks like a build')
  const elsewhere = mkdtempSync(join(tmpdir(), 'mc-snapshot-dir-'))
  t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }))
  mkdirSync(join(elsewhere, 'current'))
  const refused = build([], { MEMCACHED_OPERATOR_SNAPSHOT_DIR: elsewhere })
  t.equal(refused.status, 1)
  t.match(refused.stderr, /current exists and is not this tool's link/)
})
