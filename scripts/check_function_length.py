#!/usr/bin/env python3
"""Fails when a C++ function in the compiler's sources runs over a line limit.

The rule (issue 13): no function over 150 lines in lib/, tools/ and targets/;
long functions are split into named steps. This scanner matches braces after
stripping comments, string and character literals and preprocessor lines, and
classifies every '{' opened at namespace or class scope: a namespace, a class
(whose member function definitions are scanned in turn), a function body, or
anything else (an initializer, an enum). Lambdas and local classes inside a
function count toward that function; a lambda assigned to a namespace-scope
variable counts as a function of its own. A function's length runs from the
line of its name to the line of its closing brace.

Usage: check_function_length.py [--max N] [--exclude DIR]... [PATH]...
PATHs (files or folders) default to lib, tools and targets under the
repository root; relative PATHs and --exclude folders are taken from the
repository root.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = ('.cpp', '.cc', '.c', '.h', '.hpp', '.inc')
DEFAULT_ROOTS = ('lib', 'tools', 'targets')

IDENT = re.compile(r'[A-Za-z_]\w*')


def strip_source(text):
  """Blanks comments, literals and preprocessor lines, keeping newlines so
  that offsets still map to the same line numbers."""
  out = []
  i, n = 0, len(text)
  at_line_start = True
  while i < n:
    c = text[i]
    if c == '\n':
      out.append(c)
      at_line_start = True
      i += 1
      continue
    if at_line_start and c in ' \t':
      out.append(c)
      i += 1
      continue
    if at_line_start and c == '#':
      # A preprocessor line, with its backslash continuations.
      while i < n and text[i] != '\n':
        if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
          out.append('\n')
          i += 2
          continue
        i += 1
      continue
    at_line_start = False
    if text.startswith('//', i):
      while i < n and text[i] != '\n':
        i += 1
      continue
    if text.startswith('/*', i):
      end = text.find('*/', i + 2)
      end = n if end < 0 else end + 2
      out.append('\n' * text.count('\n', i, end))
      i = end
      continue
    raw = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', text[i:i + 24])
    if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
      close = ')' + raw.group(1) + '"'
      end = text.find(close, i + raw.end())
      end = n if end < 0 else end + len(close)
      out.append('""' + '\n' * text.count('\n', i, end))
      i = end
      continue
    if c == '"' or (c == "'" and not is_digit_separator(text, i)):
      j = i + 1
      while j < n and text[j] != c and text[j] != '\n':
        j += 2 if text[j] == '\\' else 1
      out.append(c + c)
      i = j + 1
      continue
    out.append(c)
    i += 1
  return ''.join(out)


def is_digit_separator(text, i):
  """True for the quote in 1'000'000."""
  j = i
  while j > 0 and (text[j - 1].isalnum() or text[j - 1] == '_'):
    j -= 1
  return j < i and text[j].isdigit()


def strip_template_prefix(head):
  """Drops leading `template <...>` clauses (their defaults may hold '=')."""
  while True:
    m = re.match(r'\s*template\s*<', head)
    if not m:
      return head
    depth, k = 1, m.end()
    while k < len(head) and depth:
      depth += {'<': 1, '>': -1}.get(head[k], 0)
      k += 1
    head = head[k:]


def top_level_equals(head):
  """Index of the first '=' outside parentheses that is an assignment (not
  ==, !=, <=, >= or part of `operator=`), or -1."""
  depth = 0
  for k, c in enumerate(head):
    if c in '([':
      depth += 1
    elif c in ')]':
      depth -= 1
    elif c == '=' and depth == 0:
      prev = head[k - 1] if k else ''
      nxt = head[k + 1] if k + 1 < len(head) else ''
      if prev in '=!<>' or nxt == '=':
        continue
      if re.search(r'operator\s*\S?$', head[:k]):
        continue
      return k
  return -1


def function_name(head):
  """The declarator name: the identifier (or operator) before the first
  top-level parameter list."""
  depth = 0
  for k, c in enumerate(head):
    if c == '(' and depth == 0:
      m = re.search(r'((?:[\w:~]|operator\s*[^\w\s(]+|<[^<>()]*>)+)\s*$',
                    head[:k])
      if m:
        return m.group(1), m.start(1)
    if c in '([':
      depth += 1
    elif c in ')]':
      depth -= 1
  return None, None


def classify(head):
  """What a '{' opened at namespace or class scope starts, given the text
  since the previous ';', '{' or '}' at that scope."""
  h = re.sub(r'\b(public|private|protected)\s*:(?!:)', ' ', head)
  h = re.sub(r'\[\[.*?\]\]', ' ', h)
  stripped = strip_template_prefix(h).strip()
  if re.match(r'(inline\s+)?namespace\b', stripped) or re.fullmatch(
      r'extern\s*""', stripped):
    return 'namespace', None
  eq = top_level_equals(stripped)
  if eq >= 0:
    rhs = stripped[eq + 1:].lstrip()
    if rhs.startswith('['):  # a lambda bound to a variable
      m = IDENT.findall(stripped[:eq])
      return 'function', m[-1] if m else '<lambda>'
    return 'other', None
  if '(' not in stripped:
    kw = re.search(r'\b(class|struct|union|enum)\b', stripped)
    if kw and kw.group(1) != 'enum':
      return 'class', None
    return 'other', None
  kw = re.match(r'(?:[\w\s]*\s)?(class|struct|union|enum)\b', stripped)
  if kw and stripped.find('(') > kw.end():
    # `struct X : Base<decltype(f())> {` and the like.
    return ('other' if kw.group(1) == 'enum' else 'class'), None
  return 'function', None


def ctor_init_started(head):
  """True when the head has a parameter list followed by a ':' that starts a
  constructor's member initializer list."""
  depth, closed = 0, False
  k = 0
  while k < len(head):
    c = head[k]
    if c == '(':
      depth += 1
    elif c == ')':
      depth -= 1
      if depth == 0:
        closed = True
    elif c == ':' and depth == 0 and closed:
      if head.startswith('::', k):
        k += 2
        continue
      return True
    k += 1
  return False


def scan(text):
  """Yields (name, first line, last line) for every function definition."""
  s = strip_source(text)
  line_of = []
  line = 1
  for c in s:
    line_of.append(line)
    if c == '\n':
      line += 1

  # Each scope frame: (kind, head start offset).
  stack = [['namespace', 0]]
  i, n = 0, len(s)
  while i < n:
    c = s[i]
    kind = stack[-1][0]
    if kind in ('namespace', 'class'):
      if c in ';}':
        if c == '}':
          stack.pop()
          if not stack:
            stack = [['namespace', 0]]
        stack[-1][1] = i + 1
        i += 1
        continue
      if c == '{':
        head = s[stack[-1][1]:i]
        if ctor_init_started(head):
          # `x{a}` inside a member initializer list opens no body; the body
          # follows a ')' or '}' that closes the last initializer.
          prev = head.rstrip()[-1:]
          if prev not in (')', '}'):
            i = skip_braces(s, i)
            continue
        if head.count('(') > head.count(')'):
          i = skip_braces(s, i)  # a braced expression inside parentheses
          continue
        what, name = classify(head)
        if what == 'function':
          fname, at = function_name(head)
          if name is not None:  # a lambda bound to a variable
            fname, at = name, None
          if at is None:
            at = len(head) - len(head.lstrip())
          start = stack[-1][1] + at
          end = skip_braces(s, i)
          yield (fname or '<function>', line_of[start],
                 line_of[min(end - 1, n - 1)])
          i = end
          stack[-1][1] = i
          continue
        if what in ('namespace', 'class'):
          stack.append([what, i + 1])
          i += 1
          continue
        i = skip_braces(s, i)
        continue
    i += 1


def skip_braces(s, i):
  """Offset just past the '}' matching the '{' at i."""
  depth = 0
  n = len(s)
  while i < n:
    if s[i] == '{':
      depth += 1
    elif s[i] == '}':
      depth -= 1
      if depth == 0:
        return i + 1
    i += 1
  return n


def source_files(path):
  if os.path.isfile(path):
    yield path
    return
  for d, dirs, files in os.walk(path):
    dirs.sort()
    for f in sorted(files):
      if f.endswith(SOURCE_SUFFIXES):
        yield os.path.join(d, f)


def main():
  repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('paths', nargs='*', help='files or folders to scan')
  ap.add_argument('--max', type=int, default=150, help='longest allowed')
  ap.add_argument('--exclude', action='append', default=[], metavar='DIR',
                  help='a folder to skip (repeatable)')
  args = ap.parse_args()

  def under_repo(p):
    return os.path.normpath(os.path.join(repo, p))

  roots = [under_repo(p) for p in (args.paths or DEFAULT_ROOTS)]
  excluded = [under_repo(p) for p in args.exclude]
  long_ones = []
  for root in roots:
    for path in source_files(root):
      if any(path == e or path.startswith(e + os.sep) for e in excluded):
        continue
      with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
      for name, first, last in scan(text):
        length = last - first + 1
        if length > args.max:
          long_ones.append((os.path.relpath(path, repo), first, name, length))
  for path, first, name, length in long_ones:
    print(f'{path}:{first}: {name} is {length} lines (limit {args.max})')
  if long_ones:
    print(f'{len(long_ones)} function(s) over {args.max} lines; split them '
          'into named steps', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
