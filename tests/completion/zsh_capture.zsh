# Print what zsh would offer at a Tab after each command line, one candidate a line, and a line
# "<<next>>" after the candidates of each command line.
#     zsh -f zsh_capture.zsh SCRIPT 'trainmedic walk oo' 'trainmedic probe g' ...
# An interactive zsh runs in a pseudo-terminal (zpty) with compinit and SCRIPT loaded; compadd
# is wrapped to print every candidate it is given; Tab is pressed after the line; a marker ends
# the output. (The same idea as zsh-capture-completion, written down for this test.)
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT='' RPROMPT='' PS2=''; unsetopt beep"
zpty -w z "autoload -Uz compinit && compinit -u -d ${(q)TMPDIR:-/tmp}/zcompdump-\$\$"
zpty -w z "source ${(q)1}"
zpty -w z "bindkey '^I' complete-word"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' menu no"
zpty -w z '__no_list() { compstate[list]=""; compstate[insert]=""; }'
zpty -w z '__done() { print -r -- "<<end>>"; zle kill-whole-line; }'
zpty -w z 'compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  local -a __hits
  builtin compadd -A __hits "$@"
  (( $#__hits )) && print -rl -- "<<hit>>"${^__hits}
  builtin compadd "$@"
}'
for typed in "${@[2,-1]}"; do
  # zsh empties these hook arrays after each completion: set them again. The marker is typed
  # in two pieces so that the echo of the typed line does not match it.
  zpty -w z "compprefuncs=( __no_list ); comppostfuncs=( __done ); print -r -- '<<ready'\$'>>'"
  zpty -r z line '*<<ready>>*' || exit 4
  zpty -n -w z "$typed"$'\t'
  zpty -r z output '*<<end>>*' || exit 4
  for line in ${(f)output}; do
    [[ $line == *'<<hit>>'* ]] && print -r -- "${${line##*<<hit>>}%%$'\r'}"
  done
  print -r -- '<<next>>'
done
zpty -d z
