#!/usr/bin/env python3
"""Lists C++ functions longer than N lines (default 120) as "lines file:line name"; usage:
    scripts/long_functions.py src [N] | sort -rn
A brace-counting heuristic (comments, strings and raw strings stripped): a function body is an
outermost '{' after ')' [const|noexcept|override|-> T] or a constructor's initializer list, not a
class/namespace/enum body or a lambda assigned to a variable. Issue 14 asks for none over ~120."""
import re, sys, pathlib
N = int(sys.argv[2]) if len(sys.argv) > 2 else 120
def strip(text):
    # remove comments, strings, chars (keep newlines)
    out = []; i = 0; n = len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j; i = j; continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j)); i = j; continue
        m = re.match(r'R"([^(]*)\(', text[i:i+20]) if c == 'R' and (i == 0 or not (text[i-1].isalnum() or text[i-1]=='_')) else None
        if m:
            end = ')' + m.group(1) + '"'; j = text.find(end, i + m.end()); j = n if j < 0 else j + len(end)
            out.append('""' + '\n' * text.count('\n', i, j)); i = j; continue
        if c == '"' or (c == "'" and not (i > 0 and text[i-1].isalnum())):
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == '\\': j += 1
                j += 1
            out.append('""'); i = j + 1; continue
        out.append(c); i += 1
    return ''.join(out)
for path in sorted(pathlib.Path(sys.argv[1]).rglob('*')):
    if path.suffix not in ('.cc', '.h', '.cpp', '.cu'): continue
    src = strip(path.read_text(errors='replace'))
    stack = []  # (kind, line, name)
    line = 1
    for i, c in enumerate(src):
        if c == '\n': line += 1
        elif c == '{':
            head = src[max(0, i-400):i]
            h = head.rstrip()
            kind = 'block'
            last_stmt = re.split(r'[;{}]', h)[-1]
            if re.search(r'\b(class|struct|namespace|enum|union)\b[^()]*$', last_stmt): kind = 'type'
            elif re.search(r'\)\s*(const|noexcept|override|final|mutable|\s|->\s*[\w:<>,\s*&]+)*$', h) or re.search(r'\)\s*:\s*[\w\s(),{}.:<>*&]+$', last_stmt):
                if not any(k == 'func' for k, _, _ in stack):
                    m = re.search(r'([~\w:]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)[^()]*$', last_stmt)
                    name = m.group(1) if m else '?'
                    if name not in ('if', 'for', 'while', 'switch', 'catch', 'return') and not re.search(r'\]\s*\(', last_stmt) and '=' not in last_stmt.split('(')[0]:
                        kind = 'func'
                    else: name = name
                else: name = ''
            stack.append((kind, line, locals().get('name', '') if kind == 'func' else ''))
        elif c == '}':
            if not stack: continue
            kind, start, name = stack.pop()
            if kind == 'func' and line - start + 1 > N:
                print(f'{line - start + 1:5d} {path}:{start} {name}')
