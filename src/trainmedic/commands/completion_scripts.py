"""Completion scripts for bash, zsh and fish, written from a `CommandLine` (completion_spec.py).

The structure (commands, options, which take a value, choices) is written into the script; the
values that change (tree ids, `tree#node`, probe names, saved walks) are asked of
`trainmedic __complete KIND PREFIX` at each Tab, through the program the user typed, with the
`--trees` folders already on the line. Every generated word goes through the quoting of the
shell it is for.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from trainmedic.commands.completion_spec import DYNAMIC_KINDS, Argument, Command, CommandLine

SHELLS = ("bash", "zsh", "fish")


def render(shell: str, spec: CommandLine) -> str:
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](spec)


def _value_kind(argument: Argument) -> str:
    """The kind as the bash script reads it: choices become "=word word ..."."""
    return "=" + " ".join(argument.choices) if argument.kind == "choices" else argument.kind


def _positional_kinds(command: Command) -> tuple[list[str], bool]:
    kinds = [_value_kind(p) for p in command.positionals]
    repeat = bool(command.positionals) and command.positionals[-1].repeatable
    return kinds, repeat


def _flags(arguments: tuple[Argument, ...]) -> list[str]:
    return [flag for argument in arguments for flag in argument.flags]


# -- bash -----------------------------------------------------------------------------------------
BASH_ENGINE = r"""
_trainmedic_lines() {  # fill COMPREPLY with the lines a command prints (bash 3.2 has no mapfile)
    local line
    COMPREPLY=()
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <("$@" 2>/dev/null)
}

_trainmedic_values() {  # KIND: complete the word under the cursor ($cur) as a KIND value
    case $1 in
        files) compopt -o filenames 2>/dev/null; _trainmedic_lines compgen -f -- "$cur" ;;
        dirs) compopt -o filenames 2>/dev/null; _trainmedic_lines compgen -d -- "$cur" ;;
        trees|targets|probes|walks)
            _trainmedic_lines "$prog" "${trees[@]}" __complete "$1" "$cur" ;;
        =*) _trainmedic_lines compgen -W "${1#=}" -- "$cur" ;;
        *) COMPREPLY=() ;;
    esac
}

_trainmedic() {
    local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]/#\~/$HOME}
    local cmd='' opts=$_trainmedic_global_opts valued=$_trainmedic_global_valued optional=''
    local npos=0 repeat=0 REPLY='' word option='' expect='' count=0 end=$COMP_CWORD i
    local -a trees=() args=()
    COMPREPLY=()
    # bash splits `--opt=value` at "=" (COMP_WORDBREAKS): complete the value of --opt
    if [[ $cur == = ]]; then
        cur=''; option=${COMP_WORDS[COMP_CWORD-1]}; end=$((COMP_CWORD - 1))
    elif ((COMP_CWORD > 1)) && [[ ${COMP_WORDS[COMP_CWORD-1]} == = ]]; then
        option=${COMP_WORDS[COMP_CWORD-2]}; end=$((COMP_CWORD - 2))
    fi
    for ((i = 1; i < end; i++)); do  # the words before the cursor, `--opt = value` joined
        if [[ ${COMP_WORDS[i]} == = && ${#args[@]} -gt 0 ]] && ((i + 1 < end)); then
            args[${#args[@]}-1]+="=${COMP_WORDS[i+1]}"; ((i++))
        else
            args+=("${COMP_WORDS[i]}")
        fi
    done
    for word in ${args[@]+"${args[@]}"}; do
        if [[ -n $expect ]]; then
            [[ $expect == --trees ]] && trees+=("--trees=${word/#\~/$HOME}")
            expect=''
            continue
        fi
        case $word in
            --trees=*) trees+=("--trees=${word#--trees=}") ;;
            -*) [[ $word != *=* && $valued == *" $word "* ]] && expect=$word ;;
            *)
                if [[ -z $cmd ]]; then
                    cmd=$word
                    _trainmedic_spec "$cmd"
                else
                    ((count++))
                fi ;;
        esac
    done
    [[ -z $option ]] && option=$expect
    if [[ -n $option ]] && ! [[ $optional == *" $option "* && $cur == -* ]]; then
        _trainmedic_option "$cmd" "$option"
        _trainmedic_values "$REPLY"
    elif [[ $cur == -* ]]; then
        _trainmedic_lines compgen -W "$opts" -- "$cur"
    elif [[ -z $cmd ]]; then
        _trainmedic_lines compgen -W "$_trainmedic_commands" -- "$cur"
    elif ((count < npos)) || ((npos > 0 && repeat)); then
        ((count >= npos)) && count=$((npos - 1))
        _trainmedic_positional "$cmd" "$count"
        _trainmedic_values "$REPLY"
    fi
}
"""


def bash(spec: CommandLine) -> str:
    q = shlex.quote
    out = [
        "# bash completion for trainmedic, written by `trainmedic completion bash` from its own",
        "# argument parsers (regenerate it after an upgrade). In ~/.bashrc:",
        "#     source <(trainmedic completion bash)",
        f"_trainmedic_commands={q(' '.join(c.name for c in spec.commands))}",
        f"_trainmedic_global_opts={q(' '.join(_flags(spec.options)))}",
        f"_trainmedic_global_valued={q(_padded(spec.options))}",
        "",
        "_trainmedic_spec() {  # COMMAND: its options, those taking a value, its positionals",
        "    case $1 in",
    ]
    for command in spec.commands:
        kinds, repeat = _positional_kinds(command)
        optional = " " + " ".join(f for o in command.options if o.optional_value
                                   for f in o.flags) + " "
        out.append(f"        {q(command.name)}) opts={q(' '.join(_flags(command.options)))}"
                   f" valued={q(_padded(command.options))} optional={q(optional)}"
                   f" npos={len(kinds)} repeat={int(repeat)} ;;")
    out += ["    esac", "}", "",
            "_trainmedic_option() {  # COMMAND OPTION: REPLY is the kind of the option's value",
            '    case "$1 $2" in']
    for name, options in [("", spec.options), *((c.name, c.options) for c in spec.commands)]:
        for option in options:
            if option.takes_value:
                for flag in option.flags:
                    out.append(f"        {q(f'{name} {flag}')}) REPLY={q(_value_kind(option))} ;;")
    out += ["        *) REPLY=none ;;", "    esac", "}", "",
            "_trainmedic_positional() {  # COMMAND INDEX: REPLY is the kind of that positional",
            '    case "$1 $2" in']
    for command in spec.commands:
        kinds, _repeat = _positional_kinds(command)
        for index, kind in enumerate(kinds):
            out.append(f"        {q(f'{command.name} {index}')}) REPLY={q(kind)} ;;")
    out += ["        *) REPLY=none ;;", "    esac", "}", BASH_ENGINE.rstrip(), "",
            "complete -F _trainmedic trainmedic", ""]
    return "\n".join(out)


def _padded(options: tuple[Argument, ...]) -> str:
    """" --a --b ": the flags of options that take a value, for `== *" $flag "*` tests."""
    return " " + " ".join(f for o in options if o.takes_value for f in o.flags) + " "


# -- zsh ------------------------------------------------------------------------------------------
def _zsh_text(text: str) -> str:
    """Text inside an `_arguments` spec: brackets and colons escaped."""
    for char in "\\[]:":
        text = text.replace(char, "\\" + char)
    return text


def _zsh_action(argument: Argument) -> str:
    if argument.kind == "files":
        return "_files"
    if argument.kind == "dirs":
        return "_files -/"
    if argument.kind == "choices":
        return "(" + " ".join(_zsh_text(c) for c in argument.choices) + ")"
    if argument.kind in DYNAMIC_KINDS:
        return f"_trainmedic_values {argument.kind}"
    return " "


def _zsh_option_specs(options: tuple[Argument, ...]) -> Iterator[str]:
    for option in options:
        exclusive = f"({' '.join(option.flags)})" if len(option.flags) > 1 else ""
        star = "*" if option.repeatable else ""
        for flag in option.flags:
            spec = f"{exclusive}{star}{flag}"
            if option.takes_value:
                spec += "+" if len(flag) == 2 else "="
            spec += f"[{_zsh_text(option.help)}]"
            if option.takes_value:  # as argparse: a word after `--resume` is its value
                spec += f":{_zsh_text(option.metavar)}:{_zsh_action(option)}"
            yield spec


def _zsh_positional_specs(command: Command) -> Iterator[str]:
    for index, positional in enumerate(command.positionals, start=1):
        where = "*" if positional.repeatable else str(index)
        yield f"{where}:{_zsh_text(positional.metavar)}:{_zsh_action(positional)}"


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


ZSH_ENGINE = r"""
_trainmedic_values() {  # [COMPADD OPTIONS] KIND: `trainmedic __complete KIND PREFIX`
  local -a values  # _arguments puts its compadd options before the action's own word
  values=(${(f)"$($_trainmedic_prog $_trainmedic_trees __complete ${@[-1]} "$PREFIX" \
    2>/dev/null)"})
  compadd "${@[1,-2]}" -a values
}

_trainmedic() {
  local curcontext=$curcontext state state_descr line ret=1 i
  local _trainmedic_prog=${~words[1]}
  local -a _trainmedic_trees
  typeset -A opt_args
  for ((i = 2; i < CURRENT; i++)); do  # the --trees folders already on the line
    case $words[i] in
      --trees) _trainmedic_trees+=(--trees=${~words[i+1]}) ;;
      --trees=*) _trainmedic_trees+=(--trees=${~words[i]#--trees=}) ;;
    esac
  done
  _arguments -C -s : $_trainmedic_global '(-)1:command:->command' '(-)*::argument:->argument' \
    && ret=0
  case $state in
    command) _describe -t commands 'trainmedic command' _trainmedic_commands && ret=0 ;;
    argument)
      curcontext=${curcontext%:*:*}:trainmedic-$line[1]:
      local specs=_trainmedic_args_${line[1]//-/_}
      (( ${(P)+specs} )) && _arguments -s : "${(@P)specs}" && ret=0 ;;
  esac
  return ret
}
"""


def zsh(spec: CommandLine) -> str:
    out = [
        "#compdef trainmedic",
        "# zsh completion for trainmedic, written by `trainmedic completion zsh` from its own",
        "# argument parsers (regenerate it after an upgrade). In ~/.zshrc, after compinit:",
        "#     source <(trainmedic completion zsh)",
        "# or save it as _trainmedic in a folder of $fpath.",
        "_trainmedic_commands=(",
    ]
    out += [f"  {_zsh_quote(_zsh_text(c.name) + ':' + c.help)}" for c in spec.commands]
    out += [")", "_trainmedic_global=("]
    out += [f"  {_zsh_quote(s)}" for s in _zsh_option_specs(spec.options)]
    out.append(")")
    for command in spec.commands:
        out.append(f"_trainmedic_args_{command.name.replace('-', '_')}=(")
        out += [f"  {_zsh_quote(s)}" for s in _zsh_option_specs(command.options)]
        out += [f"  {_zsh_quote(s)}" for s in _zsh_positional_specs(command)]
        out.append(")")
    out += [ZSH_ENGINE.rstrip(), "",
            'if [[ $funcstack[1] == _trainmedic ]]; then  # autoloaded from $fpath',
            '  _trainmedic "$@"',
            "else",
            "  compdef _trainmedic trainmedic",
            "fi", ""]
    return "\n".join(out)


# -- fish -----------------------------------------------------------------------------------------
FISH_ENGINE = r"""
function __trainmedic_command --description 'a command is on the line (this one, if named)'
    set -l tokens (commandline -opc)
    set -l skip 0
    for token in $tokens[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $token
            case --trees
                set skip 1
            case '-*'
            case '*'
                test -z "$argv[1]"; or test "$token" = "$argv[1]"
                return
        end
    end
    return 1
end

function __trainmedic_positional --argument-names command most --description \
        'room on the line for a positional argument of COMMAND (MOST of them, 0: any number)'
    set -l valued $argv[3..-1]  # the options of COMMAND that take a value
    set -l tokens (commandline -opc)
    set -l found 0
    set -l count 0
    set -l skip 0
    for token in $tokens[2..-1]
        if test $skip = 1
            set skip 0
        else if contains -- $token $valued
            set skip 1
        else if not string match -q -- '-*' $token
            if test $found = 0
                test "$token" = "$command"; or return 1
                set found 1
            else
                set count (math $count + 1)
            end
        end
    end
    test $found = 1; and begin; test $most = 0; or test $count -lt $most; end
end

function __trainmedic_values --argument-names kind --description 'trainmedic __complete'
    set -l tokens (commandline -opc)
    set -l trees
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --trees
                set -a trees --trees=$tokens[(math $i + 1)]
            case '--trees=*'
                set -a trees $tokens[$i]
        end
    end
    set -l program (string replace -r '^~' $HOME -- $tokens[1])
    $program $trees __complete $kind (commandline -ct) 2>/dev/null
end

complete -c trainmedic -f
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_values(argument: Argument) -> str:
    """`complete` switches for the values of an option (which needs `-r`, or `-x`: a value and
    no file names) or of a positional argument ("" where nothing can be offered)."""
    option = bool(argument.flags)
    if argument.kind == "files":
        return "-r -F" if option else "-F"
    if argument.kind == "dirs":
        words = "'(__fish_complete_directories (commandline -ct))'"
    elif argument.kind == "choices":
        words = _fish_quote(" ".join(argument.choices))
    elif argument.kind in DYNAMIC_KINDS:
        words = f"'(__trainmedic_values {argument.kind})'"
    else:
        return "-x" if option else ""
    return f"-x -a {words}" if option else f"-a {words}"


def _fish_option(condition: str, option: Argument) -> str:
    parts = ["complete -c trainmedic -n", _fish_quote(condition)]
    for flag in option.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if option.takes_value:
        parts.append(_fish_values(option))
    parts.append("-d " + _fish_quote(option.help))
    return " ".join(parts)


def fish(spec: CommandLine) -> str:
    out = [
        "# fish completion for trainmedic, written by `trainmedic completion fish` from its own",
        "# argument parsers (regenerate it after an upgrade). Save it with:",
        "#     trainmedic completion fish > ~/.config/fish/completions/trainmedic.fish",
        FISH_ENGINE.strip(), "",
    ]
    for command in spec.commands:
        out.append(f"complete -c trainmedic -n 'not __trainmedic_command' -a "
                   f"{_fish_quote(command.name)} -d {_fish_quote(command.help)}")
    out += [_fish_option("not __trainmedic_command", o) for o in spec.options]
    for command in spec.commands:
        condition = f"__trainmedic_command {command.name}"
        out += [_fish_option(condition, o) for o in command.options]
        valued = " ".join(f for o in command.options if o.takes_value for f in o.flags)
        for index, positional in enumerate(command.positionals, start=1):
            values = _fish_values(positional)
            if values:  # free text (a number, a spec) offers nothing
                most = 0 if positional.repeatable else index
                room = f"__trainmedic_positional {command.name} {most} {valued}"
                out.append(f"complete -c trainmedic -n {_fish_quote(room)} {values} -d "
                           f"{_fish_quote(positional.metavar)}")
    return "\n".join(out) + "\n"
