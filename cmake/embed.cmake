# Writes the bytes of IN as a C array NAME (and NAME_len) into OUT: the chat page goes into the
# binary this way, so the server needs no file beside it. Run as cmake -DIN= -DOUT= -DNAME= -P.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by cmake/embed.cmake */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
