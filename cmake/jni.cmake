# The JNI bridge of examples/jni_bridge.c as a shared library (libedgelm_jni.so, what an Android app
# loads with System.loadLibrary("edgelm_jni"); docs/android.md). The NDK's sysroot has its own
# jni.h; elsewhere it comes from a JDK (Debian: default-jdk-headless; scripts/deps.sh installs it),
# whose jni.h and linux/jni_md.h are the same for every Linux architecture, so the host JDK's
# headers serve the ARM64 cross builds too. The test jni_bridge checks the library exports the
# Java_ entry points; it is skipped (77) when no jni.h was found.
if(ANDROID)
  set(EDGELM_JNI_FOUND TRUE)
  set(EDGELM_JNI_INCLUDES "")
else()
  file(GLOB EDGELM_JDK_INCLUDES /usr/lib/jvm/default-java/include /usr/lib/jvm/*/include)
  find_path(JNI_H_DIR jni.h HINTS ENV JAVA_HOME PATH_SUFFIXES include PATHS ${EDGELM_JDK_INCLUDES}
            NO_CMAKE_FIND_ROOT_PATH)
  if(JNI_H_DIR AND EXISTS ${JNI_H_DIR}/linux/jni_md.h)
    set(EDGELM_JNI_FOUND TRUE)
    set(EDGELM_JNI_INCLUDES ${JNI_H_DIR} ${JNI_H_DIR}/linux)
  endif()
endif()
if(EDGELM_JNI_FOUND)
  add_library(edgelm_jni SHARED ${PROJECT_SOURCE_DIR}/examples/jni_bridge.c)
  target_compile_definitions(edgelm_jni PRIVATE EDGELM_JNI)
  target_include_directories(edgelm_jni PRIVATE ${EDGELM_JNI_INCLUDES})
  target_link_libraries(edgelm_jni PRIVATE edgelm)
  add_test(NAME jni_bridge COMMAND bash ${PROJECT_SOURCE_DIR}/tests/jni_bridge.sh $<TARGET_FILE:edgelm_jni>
           ${EDGELM_SHARED}/fixtures)
else()
  add_test(NAME jni_bridge COMMAND bash ${PROJECT_SOURCE_DIR}/tests/jni_bridge.sh "")
endif()
set_tests_properties(jni_bridge PROPERTIES SKIP_RETURN_CODE 77)
