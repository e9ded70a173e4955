# cmake -DIN=file -DOUT=file.c -P embed.cmake: the file as the C string
# lector_openapi_json (bytes in hex, so that nothing in it needs escaping).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from docs/openapi.json by src/serve/embed.cmake */\nconst char lector_openapi_json[] = {${bytes} 0};\n")
