/**
 * Which line of a template wrote a line of its output, for an error found in the output (YAML that
 * does not parse, an object without a name) on a line that a `<%= %>` computed: its text is not in
 * the template, so only the template's own bookkeeping can say where it came from.
 *
 * EJS with `compileDebug` keeps `__line`, the template line of the tag being run, in the function
 * it generates (ejs `Template.generateSource`); the trace runs that same generated body once more
 * with an `__append` that records, for every piece of output, where it starts and ends, the line of
 * the tag that wrote it, and whether `escapeFn` made it (an expression) or it is the template's text.
 * The prelude is ejs `Template.compile`'s (`__output`, `__append`, the destructured locals, strict
 * mode), written out here because EJS offers no hook on `__append`. Only an error pays for it: the
 * trace compiles and renders the template again, the normal render never does.
 */
import ejs from 'ejs'

/** One piece of output: `[start, end)` in the output, the template line, and whether an expression wrote it. */
interface Piece {
  start: number
  end: number
  line: number
  expression: boolean
}

/** The options of the template's compile that the trace needs. */
export interface TraceOptions {
  localsName: string
  destructuredLocals: readonly string[]
  escape: (value: unknown) => string
}

type Traced = (locals: Record<string, unknown>, escape: (value: unknown) => string, record: (start: number, end: number, line: number, expression: boolean) => void) => string

/** Compiles the tracing variant of a template (`undefined` when EJS's generated source cannot be had). */
export function compileTrace(source: string, options: TraceOptions & Record<string, unknown>): ((locals: Record<string, unknown>, outputLine: number) => number | undefined) | undefined {
  let fn: Traced
  try {
    const template = new (ejs as unknown as { Template: new (s: string, o: object) => { generateSource(): void; source: string } }).Template(source, options)
    template.generateSource()
    const locals = options.localsName
    const destructured = options.destructuredLocals.map((name) => `${name} = ${locals}[${JSON.stringify(name)}]`).join(', ')
    const src = [
      '"use strict";',
      'var __line = 1, __output = "", __expression = false;',
      'function __append(s) { if (s !== undefined && s !== null) { var start = __output.length; __output += s; __record(start, __output.length, __line, __expression) } __expression = false }',
      'function escapeFn(v) { __expression = true; return __escape(v) }',
      destructured ? `var ${destructured};` : '',
      template.source,
      'return __output;',
    ].join('\n')
    fn = new Function(locals, '__escape', '__record', src) as Traced
  } catch {
    return undefined
  }
  return (locals, outputLine) => {
    const pieces: Piece[] = []
    let output: string
    try {
      output = fn(locals, options.escape, (start, end, line, expression) => pieces.push({ start, end, line, expression }))
    } catch {
      return undefined
    }
    return lineOf(output, pieces, outputLine)
  }
}

/**
 * The template line of the first expression that wrote part of output line `n` (1-based); undefined
 * when the template's text alone wrote it (the caller finds that text in the template) or there is
 * no such line.
 */
function lineOf(output: string, pieces: Piece[], n: number): number | undefined {
  let start = 0
  for (let i = 1; i < n; i++) {
    const next = output.indexOf('\n', start)
    if (next < 0) return undefined
    start = next + 1
  }
  const newline = output.indexOf('\n', start)
  const end = newline < 0 ? output.length : newline
  // A piece that ends with the newline before the line wrote nothing of it.
  const piece = pieces.find((p) => p.expression && p.start < Math.max(end, start + 1) && p.end > start && output.slice(Math.max(p.start, start), Math.min(p.end, end)).trim() !== '')
  return piece?.line
}
